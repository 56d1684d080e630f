#!/bin/bash
# Device run N: `cuzk selftest --gpu` to 2^24, then `cuzk bench gpu` at the issue's sizes.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
step selftest-24 230 $C selftest --gpu --max-log2 24 $K > $OUT/selftest.txt 2>&1
for a in "--op msm --log2 22" "--op msm --log2 24" "--op msm --log2 26" "--op msm --log2 22 --scalars witness" \
         "--op msm --log2 24 --scalars witness" "--op msm --log2 26 --scalars witness" "--op msm --log2 22 --curve g2" \
         "--op ntt --log2 27" "--op partition --log2 22"; do
  echo "# $C bench gpu $a --runs 3" >> $OUT/bench.err
  step "bench $a" 60 $C bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
done
echo "# $C bench gpu --op partition --log2 27 --runs 1" >> $OUT/bench.err
step "bench partition 27" 170 $C bench gpu --op partition --log2 27 --runs 1 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
