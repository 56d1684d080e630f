#!/bin/bash
# One device call: main at ef3feab (carry/cuzk-main, H window tables over the whole query) and
# branch folds-main (carry/cuzk-folds: main plus the ones' partial sums folded 16 ways a launch).
# carry/cuzk-base is 4c29916, the kernels when the GPU-kernel issue was filed (0.71-0.77 s a
# partition). 1. selftests: table (main), g1, queries, table (folds) to 2^22; 2. `bench gpu`
# partition 2^22, both builds, tables on; 3. 2 KiB params; 4. side by side with supraseal-c2 from
# the page-locked pool, 3 runs alternating (main, main without tables, folds); 5. `bench prove
# --compare cpu` (same bytes? verified?), both builds; 6. `bench pipeline --jobs 16` base, main,
# folds, twice alternating. Everything lands in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
B=$(mktemp -d); C=$(realpath carry)
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk-main > $B/main; printf '#!/bin/sh\nexec %s "$@" --pinned --no-window-tables\n' $C/cuzk-main > $B/notable
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk-folds > $B/folds; chmod +x $B/*
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-570}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-table-main 60 carry/cuzk-main selftest --gpu --only table --max-log2 22 $K > $R/selftest-table-main.txt 2>&1
for o in g1 queries table; do step selftest-$o-folds 60 carry/cuzk-folds selftest --gpu --only $o --max-log2 22 $K > $R/selftest-$o-folds.txt 2>&1; done
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 90 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for b in cuzk-main cuzk-folds cuzk-main cuzk-folds; do bench $b --op partition --log2 22 --pinned; done
step params 170 carry/cuzk-main params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
P=/tmp/cuzk-params OUT=$R/side step side-by-side 200 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 $B/main $B/notable $B/folds > $R/side/side.txt 2>&1
P=/tmp/cuzk-params
for b in cuzk-main cuzk-folds; do echo "# carry/$b bench prove --kind porep-c2 --backend gpu --pinned --compare cpu --params-dir $P $K" > $R/prove-$b.err
  step "prove $b" 60 carry/$b bench prove --kind porep-c2 --backend gpu --pinned --compare cpu --params-dir $P $K > $R/prove-$b.json 2>> $R/prove-$b.err; done
for round in 1 2; do for b in cuzk-base cuzk-main cuzk-folds; do
  echo "# carry/$b bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce-$b" >> $R/pipeline.err
  step "pipeline $b $round" 45 carry/$b bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce-$b >> $R/pipeline.jsonl 2>> $R/pipeline.err
done; done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
