#!/bin/bash
# Device call 2 (profiles of the start's kernels, carry/cuzk-main = bf6069c): 1. ncu --set full of
# the G1 accumulation of a 2^22 MSM, its stall reasons per SASS instruction (source page) and raw
# metrics; 2. ncu of every kernel of a 2^27 and a 2^22 NTT (durations, memory, occupancy); 3. `bench
# gpu --op h` at 2^27 (seven NTTs and the H MSM, h never leaving the device). Everything lands in
# $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-300}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
M=carry/cuzk-main
S="--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section SchedulerStats --section ComputeWorkloadAnalysis"
step "ncu ntt 27" 90 ncu --clock-control none -k regex:'fr_' -c 6 $S $M bench gpu --op ntt --log2 27 --runs 1 $K > $R/ncu-ntt27.txt 2>&1
step "ncu ntt 22" 40 ncu --clock-control none -k regex:'fr_' -c 6 $S $M bench gpu --op ntt --log2 22 --runs 1 $K > $R/ncu-ntt22.txt 2>&1
step "ncu acc full" 90 ncu --clock-control none --set full --import-source no -k regex:msm_accumulate_g1 -c 1 -o $R/acc $M bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-acc-full.log 2>&1
step "ncu acc source" 60 sh -c "ncu -i $R/acc.ncu-rep --page source --csv --print-source sass > $R/acc-source.csv 2> $R/acc-source.err"
step "ncu acc raw" 30 sh -c "ncu -i $R/acc.ncu-rep --page raw --csv > $R/acc-raw.csv 2>&1"
step "ncu acc details" 30 sh -c "ncu -i $R/acc.ncu-rep --page details --print-details all > $R/acc-details.txt 2>&1"
step "bench h 27" 60 sh -c "$M bench gpu --op h --log2 27 --runs 2 $K > $R/bench-h27.jsonl 2> $R/bench-h27.err"
ls -la $R >> $R/steps.txt
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
