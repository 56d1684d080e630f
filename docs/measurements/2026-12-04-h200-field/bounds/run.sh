#!/bin/bash
# Device run L: the accumulation's register bound (carry/cuzk-lb4: <= 128 registers, lb5: <= 102)
# against none (carry/cuzk, which also frees h's host vectors after staging).
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
for bin in carry/cuzk-lb4 carry/cuzk-lb5; do
  step "$bin selftest-16" 100 $bin selftest --gpu --max-log2 16 --only g1,g2 $K >> $OUT/selftest.txt 2>&1 || tail -5 $OUT/selftest.txt >&2
done
for a in "--op msm --log2 22" "--op msm --log2 22 --curve g2" "--op msm --log2 26"; do
  for bin in $C carry/cuzk-lb4 carry/cuzk-lb5; do
    echo "# $bin bench gpu $a --runs 3" >> $OUT/bench.err
    step "$bin bench $a" 90 $bin bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
  done
done
for a in "--op h --log2 22" "--op partition --log2 22"; do
  for bin in $B $C; do
    echo "# $bin bench gpu $a --runs 3" >> $OUT/bench.err
    CUZK_LOG=debug step "$bin bench $a" 90 $bin bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/debug.log
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
