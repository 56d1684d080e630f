#!/bin/bash
# Device call 1 (binaries: carry/cuzk = e7a9e81, carry/cuzk-base = 015ede8, carry/cuzk-order = e7a9e81 with
# the kernels of 015ede8). One device call: side by side with supraseal-c2 on one 2 KiB PoRep partition (2^22), supraseal-c2's
# prover, the new binary (carry/cuzk), the starting one (carry/cuzk-base, 015ede8) and the
# reorder-only one (carry/cuzk-order: the assignment first, the starting kernels), alternating; then
# the new kernels' selftest; then `bench gpu` rounds alternating the starting and the new binary
# while the call's time lasts. Everything lands in $OUT/r.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-480}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
mkdir -p $R/side
OUT=$R/side step side-by-side 280 docs/measurements/2026-12-05-h100-square/side-by-side.sh carry/supraseal 3 \
  carry/cuzk carry/cuzk-base carry/cuzk-order > $R/side/side.txt 2>&1
step selftest-16 60 carry/cuzk selftest --gpu --max-log2 16 $K > $R/selftest.txt 2>&1
for round in 1 2; do
  for a in "--op msm --log2 22" "--op msm --log2 26" "--op partition --log2 22" "--op msm --log2 22 --curve g2"; do
    for b in cuzk-base cuzk; do
      echo "# round $round: carry/$b bench gpu $a --runs 3 $K" >> $R/bench.err
      step "$b $a" 40 carry/$b bench gpu $a --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench.err
    done
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
