#!/bin/bash
# Device run C: selftest of the fixed kernels (called field products, one-exit curve additions),
# kernel benches at 2^22, the register-capped accumulation variant, side by side with supraseal-c2, ncu.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt; return $rc; }
if ! step selftest-4 60 $C selftest --gpu --max-log2 4 $K > $OUT/selftest.txt 2>&1; then
  step sanitizer 90 compute-sanitizer --tool memcheck --print-limit 10 $C selftest --gpu --max-log2 4 $K > $OUT/sanitizer.txt 2>&1
  exit 1
fi
step selftest-22 200 $C selftest --gpu --max-log2 22 $K > $OUT/selftest.txt 2>&1
for a in "--op msm --log2 22" "--op msm --log2 22 --scalars witness" "--op msm --log2 22 --curve g2" "--op msm --log2 20 --curve g2 --scalars witness" "--op ntt --log2 22" "--op h --log2 22" "--op partition --log2 22"; do
  echo "# cuzk bench gpu $a --runs 3" >> $OUT/bench.err
  step "bench $a" 90 $C bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
done
echo "# capped: cuzk bench gpu --op msm --log2 22 --runs 3" >> $OUT/bench.err
step "capped bench --op msm --log2 22" 60 carry/cuzk-d bench gpu --op msm --log2 22 --runs 3 $K > $OUT/bench-capped.jsonl 2>> $OUT/bench.err
step side-by-side 260 carry/side-by-side.sh $C 3 > $OUT/side.txt 2>&1
step ncu 60 ncu --clock-control none -k regex:msm_accumulate_g1 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section LaunchStats $C bench gpu --op msm --log2 22 --runs 1 $K > $OUT/ncu.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
