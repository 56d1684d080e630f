#!/bin/bash
# Device run J: twiddles in shared memory (carry/cuzk), the same with the Fp product inlined
# (carry/cuzk-inl), against the kernels before this session (carry/cuzk-base).
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base; I=carry/cuzk-inl
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
for bin in $C $I; do
  step "$bin selftest-18" 150 $bin selftest --gpu --max-log2 18 $K >> $OUT/selftest.txt 2>&1 || tail -20 $OUT/selftest.txt >&2
done
for a in "--op ntt --log2 27" "--op ntt --log2 22" "--op msm --log2 22" "--op msm --log2 22 --curve g2" "--op partition --log2 22" "--op msm --log2 26"; do
  for bin in $B $C $I; do
    [ "$bin" = "$I" ] && case "$a" in *ntt*) continue;; esac
    echo "# $bin bench gpu $a --runs 3" >> $OUT/bench.err
    step "$bin bench $a" 90 $bin bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
