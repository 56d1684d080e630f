#!/bin/bash
# Device run D: the 32 GiB shapes with bases made on the host by the batched walk: G1 MSM 2^26 and
# 2^24, NTT 2^27, a synthetic 2^27 partition. Each step bounded; results written as they come.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  echo "# cuzk bench gpu $*" >> $OUT/bench.err
  timeout $t $C bench gpu "$@" $K >> $OUT/bench.jsonl 2>> $OUT/bench.err; local rc=$?
  echo "$name rc $rc $(( $(date +%s)-s ))s; free: $(free -g | awk '/Mem/{print $3" GiB used"}')" | tee -a $OUT/steps.txt; }
step msm26 45 --op msm --log2 26 --runs 2
step ntt27 30 --op ntt --log2 27 --runs 2
step partition27 120 --op partition --log2 27 --runs 1
step msm24 20 --op msm --log2 24 --runs 2
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
