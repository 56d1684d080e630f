#!/bin/bash
# Device run I: the even/odd Montgomery product (carry/cuzk) against the kernels before it
# (carry/cuzk-base): selftest, then kernel benches alternating.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
if ! step selftest-16 120 $C selftest --gpu --max-log2 16 $K > $OUT/selftest.txt 2>&1; then
  step sanitizer 90 compute-sanitizer --tool memcheck --print-limit 10 $C selftest --gpu --max-log2 4 $K > $OUT/sanitizer.txt 2>&1
  exit 1
fi
for a in "--op msm --log2 22" "--op msm --log2 22 --curve g2" "--op msm --log2 22 --scalars witness" "--op h --log2 22" "--op partition --log2 22" "--op msm --log2 26" "--op ntt --log2 27"; do
  for bin in $B $C; do
    echo "# $bin bench gpu $a --runs 3" >> $OUT/bench.err
    step "$bin bench $a" 90 $bin bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
