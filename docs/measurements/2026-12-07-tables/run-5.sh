#!/bin/bash
# The next device call, for an H200 (not run this session: no device time left). carry/cuzk = main
# at ccb15b0 or later (the H table over its whole resident query), carry/cuzk-notable = it with
# --no-window-tables, carry/cuzk-pinned and carry/cuzk-pinned-notable with --pinned (see
# README.md). 1. the table selftest (calls summing fewer points than their query) to 2^22; 2. side
# by side with supraseal-c2 from the page-locked pool, 5 runs alternating (the 0.30x target is the
# H200's); 3. `bench gpu` G1 MSM 2^26 with and without the table (71 GB: the H200 holds it); 4. the
# synthetic 2^27 partition (every query's bases resident on 141 GB). Everything lands in $OUT/r5.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r5.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-560}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-table 120 carry/cuzk selftest --gpu --only table --max-log2 22 $K > $R/selftest-table.txt 2>&1
step params 170 carry/cuzk params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
P=/tmp/cuzk-params OUT=$R/side step side-by-side 150 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 5 carry/cuzk-pinned carry/cuzk-pinned-notable > $R/side/side.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 90 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for b in cuzk cuzk-notable; do bench $b --op msm --log2 26; done
bench cuzk --op partition --log2 27 --pinned
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
