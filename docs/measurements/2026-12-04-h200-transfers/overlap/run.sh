#!/bin/bash
# Device run F: every G1 sum in one call (uploads on a copy stream beside the NTTs), against the
# kernels before this session (carry/cuzk-base): selftest, kernel benches at 2^22, side by side.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
if ! step selftest-4 60 $C selftest --gpu --max-log2 4 $K > $OUT/selftest.txt 2>&1; then
  step sanitizer 90 compute-sanitizer --tool memcheck --print-limit 10 $C selftest --gpu --max-log2 4 $K > $OUT/sanitizer.txt 2>&1
  exit 1
fi
step selftest-20 200 $C selftest --gpu --max-log2 20 $K >> $OUT/selftest.txt 2>&1
for a in "--op h --log2 22" "--op partition --log2 22"; do
  for bin in $B $C; do
    echo "# $bin bench gpu $a --runs 3" >> $OUT/bench.err
    step "$bin bench $a" 90 $bin bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
  done
done
step side-by-side 300 carry/side-by-side.sh $C 3 $B > $OUT/side.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
