#!/bin/bash
# Device run G1: `cuzk selftest --gpu` to 2^24 (every check), then the 32 GiB shapes: a synthetic
# 2^27 partition with the kernels before this session (carry/cuzk-base) and now, G1 MSM 2^26 and
# NTT 2^27 now.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
step selftest-24 330 $C selftest --gpu --max-log2 24 $K > $OUT/selftest.txt 2>&1
for a in "$C --op partition --log2 27" "$B --op partition --log2 27" "$C --op msm --log2 26" "$C --op ntt --log2 27"; do
  set -- $a; bin=$1; shift
  echo "# $bin bench gpu $* --runs 1" >> $OUT/bench.err
  step "$bin bench $*" 100 $bin bench gpu "$@" --runs 1 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
