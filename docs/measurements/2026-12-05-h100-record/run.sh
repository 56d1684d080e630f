#!/bin/bash
# Device run I (H200): figures of record for main (carry/cuzk-ntt = 4a3a6d7): side by side with
# supraseal-c2 (3 runs alternating), selftest to 2^24, `bench gpu` at the issue's sizes, ncu of the
# G1 accumulation at 2^22. Everything lands in $OUT/i.tgz.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/i.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; N=$(realpath carry/cuzk-ntt)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
export OUT_SAVE=$OUT; mkdir -p $R/side
OUT=$R/side step side-by-side 240 carry/side-by-side.sh $N 3 > $R/side/side.txt 2>&1
OUT=$OUT_SAVE
for a in "--op msm --log2 22" "--op msm --log2 24" "--op msm --log2 26" "--op msm --log2 22 --scalars witness" \
         "--op msm --log2 24 --scalars witness" "--op msm --log2 26 --scalars witness" "--op msm --log2 22 --curve g2" \
         "--op ntt --log2 22" "--op ntt --log2 27" "--op h --log2 22" "--op partition --log2 22"; do
  echo "# cuzk bench gpu $a --runs 3 $K" >> $R/bench.err
  step "bench $a" 60 $N bench gpu $a --runs 3 $K >> $R/bench.jsonl 2>> $R/bench.err
done
step ncu-acc 60 ncu --clock-control none -k regex:msm_accumulate_g1 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats --section SchedulerStats $N bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-acc.txt 2>&1
step selftest-24 240 $N selftest --gpu --max-log2 24 $K > $R/selftest.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
