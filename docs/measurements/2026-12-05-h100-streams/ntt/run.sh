#!/bin/bash
# Device run H: the NTT passes with neighbouring columns per block and the tile in two planes
# (carry/cuzk-ntt) against the session's binary (carry/cuzk): selftest of NTT to 2^24 and h to
# 2^22 against the CPU backend, `bench gpu` NTT 2^22 and 2^27 and h 2^22 alternating, ncu of the
# new passes. Everything lands in $OUT/h.tgz.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/h.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; C=$(realpath carry/cuzk); N=$(realpath carry/cuzk-ntt)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step "selftest ntt 24" 90 $N selftest --gpu --only ntt --max-log2 24 $K > $R/selftest-ntt.txt 2>&1
step "selftest h 22" 90 $N selftest --gpu --only h --max-log2 22 $K > $R/selftest-h.txt 2>&1
for round in 1 2; do
  for bin in $C $N; do
    for a in "--op ntt --log2 22" "--op ntt --log2 27" "--op h --log2 22"; do
      echo "# $bin bench gpu $a --runs 5 $K" >> $R/bench.err
      step "$(basename $bin) $a" 60 $bin bench gpu $a --runs 5 $K | sed "s/^{/{\"binary\":\"$(basename $bin)\",\"round\":$round,/" >> $R/bench.jsonl 2>> $R/bench.err
    done
  done
done
step ncu-ntt 45 ncu --clock-control none -k regex:fr_ntt_tiles -c 3 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats $N bench gpu --op ntt --log2 22 --runs 1 $K > $R/ncu-ntt.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
