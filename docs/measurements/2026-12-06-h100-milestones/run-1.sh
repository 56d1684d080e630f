#!/bin/bash
# Device call 1. Binaries: carry/cuzk-head = 9a517fa (milestones logged at debug); carry/cuzk2 =
# 2530d6d (the same kernels, identical SASS, with the compute stream at the highest priority);
# carry/cuzk-ntt = 426872f (Fr's reduction rows without the multiplier for r[0], r[1]; the NTT's
# lowest-stage twiddles from a table, its stage 0 without products). Each cubin in carry/kernels.
# 1. selftest of the changed kernels (NTT, h) against the CPU; 2. side by side with supraseal-c2,
# 3 runs alternating, CUZK_LOG=info,cuzk=debug (each build's first log kept); 3. `bench gpu` NTT
# 2^22 and 2^27 and the synthetic 2^22 partition, builds alternating. Everything in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-420}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step "selftest ntt" 45 carry/cuzk-ntt selftest --gpu --only ntt --max-log2 22 $K > $R/selftest-ntt.txt 2>&1
step "selftest h" 60 carry/cuzk-ntt selftest --gpu --only h --max-log2 22 $K > $R/selftest-h.txt 2>&1
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side step side-by-side 280 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk-head carry/cuzk-ntt carry/cuzk2 > $R/side/side.txt 2>&1
for round in 1 2; do
  for b in cuzk-head cuzk-ntt; do
    for log2 in 22 27; do
      echo "# round $round: carry/$b bench gpu --op ntt --log2 $log2 --runs 3 $K" >> $R/bench-$b.err
      step "$b ntt $log2" 25 carry/$b bench gpu --op ntt --log2 $log2 --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err
    done
  done
done
for round in 1 2; do
  for b in cuzk-head cuzk-ntt cuzk2; do
    echo "# round $round: CUZK_LOG=info,cuzk=debug carry/$b bench gpu --op partition --log2 22 --runs 3 $K" >> $R/bench-$b.err
    CUZK_LOG=info,cuzk=debug step "$b partition" 25 carry/$b bench gpu --op partition --log2 22 --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err
  done
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
