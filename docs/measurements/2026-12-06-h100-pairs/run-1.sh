#!/bin/bash
# Device call 1. Binaries: carry/cuzk-main = bf6069c (the session's start); carry/cuzk-pair = the
# mixed addition with its independent products in pairs (fp_mul2: two products a call, the squares
# P², R² by fp_sqr2); carry/cuzk-pairm = the same with P², R² by fp_mul2 (no square). Each cubin in
# carry/kernels; the binaries travel xz-compressed. 1. selftest of the pair builds' G1 MSMs (edge
# scalars) and the points; 2. `bench gpu`, builds alternating, two rounds: G1 MSM 2^22 and 2^26
# (random), the synthetic 2^22 partition; 3. ncu of the accumulation (main, pair). Everything lands
# in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-400}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step "selftest g1 pair" 60 carry/cuzk-pair selftest --gpu --only g1 --max-log2 20 $K > $R/selftest-g1-pair.txt 2>&1
step "selftest g1 pairm" 40 carry/cuzk-pairm selftest --gpu --only g1 --max-log2 18 $K > $R/selftest-g1-pairm.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 30 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for round in 1 2; do
  for b in cuzk-main cuzk-pair cuzk-pairm; do bench $b --op msm --log2 22; bench $b --op msm --log2 26; bench $b --op partition --log2 22; done
done
S="--section SpeedOfLight --section Occupancy --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section SchedulerStats --section MemoryWorkloadAnalysis"
for b in cuzk-main cuzk-pair; do
  step "ncu $b" 45 ncu --clock-control none -k regex:msm_accumulate_g1 -c 1 $S carry/$b bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-$b.txt 2>&1
done
step "selftest points pair" 30 carry/cuzk-pair selftest --gpu --only points $K > $R/selftest-points-pair.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
