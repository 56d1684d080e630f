#!/bin/bash
# Device run B: which change faults (stack limit, PTX add/sub, called fp_mul), sanitizer, MSM timings.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used --format=csv > $OUT/smi.txt
T0=$(date +%s)
step() { # name timeout cmd...
  local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@" > $OUT/$name.txt 2>&1; local rc=$?
  echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt; return $rc
}
step st4-B-ptx 60 carry/cuzk selftest --gpu --max-log2 4 $K; B=$?
CUZK_PORTABLE_FIELD=1 step st4-B-portable 60 carry/cuzk selftest --gpu --max-log2 4 $K
step st4-A-ptx-stack8k 60 carry/cuzk-stack selftest --gpu --max-log2 4 $K
step st4-C-ptx 60 carry/cuzk-c selftest --gpu --max-log2 4 $K; C=$?
CUZK_PORTABLE_FIELD=1 step st4-C-portable 60 carry/cuzk-c selftest --gpu --max-log2 4 $K
step san-C-ptx 100 compute-sanitizer --tool memcheck --print-limit 10 carry/cuzk-c selftest --gpu --max-log2 4 $K
[ $B -ne 0 ] && step san-B-ptx 70 compute-sanitizer --tool memcheck --print-limit 10 carry/cuzk selftest --gpu --max-log2 4 $K
for v in B:carry/cuzk C:carry/cuzk-c; do
  n=${v%%:*}; b=${v#*:}
  step bench-msm22-$n 60 $b bench gpu --op msm --log2 22 --runs 3 $K
  step bench-g2-20-$n 40 $b bench gpu --op msm --log2 20 --curve g2 --runs 3 $K
done
[ $C -eq 0 ] && step st22-C-ptx 130 carry/cuzk-c selftest --gpu --max-log2 22 $K
echo total $(( $(date +%s)-T0 ))s | tee -a $OUT/steps.txt
