#!/bin/bash
# Device call 2 (binaries: carry/cuzk2 = 2530d6d: the compute stream at the highest priority and the call's
# milestones logged, carry/cuzk = e7a9e81, carry/cuzk-base = 015ede8): side by side with supraseal-c2,
# 3 runs alternating, with CUZK_LOG=info,cuzk=debug (each build's first log kept); then the
# synthetic 2^22 partition of `bench gpu`, cuzk and cuzk2 alternating. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-270}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side step side-by-side 250 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk2 carry/cuzk carry/cuzk-base > $R/side/side.txt 2>&1
for round in 1; do
  for b in cuzk cuzk2; do
    echo "# round $round: carry/$b bench gpu --op partition --log2 22 --runs 3 $K" >> $R/bench.err
    step "$b partition" 30 carry/$b bench gpu --op partition --log2 22 --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench.err
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
