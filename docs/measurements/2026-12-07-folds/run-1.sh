#!/bin/bash
# One device call: main at ef3feab (carry/cuzk-main, H window tables over the whole query) and
# branch folds-main (carry/cuzk-folds: main plus the ones' partial sums folded 16 ways a launch).
# carry/cuzk-base is 4c29916, the kernels when the GPU-kernel issue was filed (0.71-0.77 s a
# partition). Trimmed to one call of the device time left: 1. selftests of the folds (g1,
# queries) to 2^22; 2. `bench gpu` partition 2^22, both builds; 3. 2 KiB params; 4. side by side
# with supraseal-c2 from the page-locked pool, 3 runs alternating (main, folds); 5. `bench prove
# --compare cpu` (same bytes? verified?); 6. `bench pipeline --jobs 16` base and main; 7. `bench
# gpu` G1 MSM 2^26, NTT 2^27, the synthetic 2^27 partition; 8. `selftest --gpu` to 2^24 with
# what time is left. Everything lands in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
B=$(mktemp -d); C=$(realpath carry)
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk-main > $B/main; printf '#!/bin/sh\nexec %s "$@" --pinned --no-window-tables\n' $C/cuzk-main > $B/notable
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk-folds > $B/folds; chmod +x $B/*
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-540}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
for o in g1 queries; do step selftest-$o-folds 40 carry/cuzk-folds selftest --gpu --only $o --max-log2 22 $K > $R/selftest-$o-folds.txt 2>&1; done
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" ${T:-60} carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for b in cuzk-main cuzk-folds; do bench $b --op partition --log2 22 --pinned; done
step params 170 carry/cuzk-main params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
P=/tmp/cuzk-params OUT=$R/side step side-by-side 170 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 $B/main $B/folds > $R/side/side.txt 2>&1
P=/tmp/cuzk-params
echo "# carry/cuzk-main bench prove --kind porep-c2 --backend gpu --pinned --compare cpu --params-dir $P $K" > $R/prove.err
step prove 40 carry/cuzk-main bench prove --kind porep-c2 --backend gpu --pinned --compare cpu --params-dir $P $K > $R/prove.json 2>> $R/prove.err
for b in cuzk-base cuzk-main; do
  echo "# carry/$b bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce-$b" >> $R/pipeline.err
  step "pipeline $b" 30 carry/$b bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce-$b >> $R/pipeline.jsonl 2>> $R/pipeline.err
done
T=30 bench cuzk-main --op msm --log2 26; T=30 bench cuzk-main --op ntt-bit-reversed --log2 27
T=80 bench cuzk-main --op partition --log2 27 --pinned
step selftest-24 120 carry/cuzk-main selftest --gpu --max-log2 24 $K > $R/selftest-24.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
