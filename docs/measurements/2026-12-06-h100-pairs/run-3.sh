#!/bin/bash
# Device call 3. Binaries: carry/cuzk-main = bf6069c (the session's start); carry/cuzk-ntt = 8dd608d
# (NTT passes with the stages in registers, fr_ntt_regs; the bit reversal by tiles); carry/cuzk-nttc
# = the same with the twiddle product called, not inlined (code 3.3K instructions, not 8.9K).
# 1. selftest of the NTTs (both builds) and h; 2. `bench gpu`, builds alternating, two rounds: NTT
# 2^22 and 2^27, h 2^22, the synthetic 2^22 partition; 3. ncu of the 2^27 NTT's kernels (cuzk-ntt).
# Everything lands in $OUT/r3.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r3.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-400}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
for b in cuzk-ntt cuzk-nttc; do
  step "selftest ntt $b" 60 carry/$b selftest --gpu --only ntt --max-log2 22 $K > $R/selftest-ntt-$b.txt 2>&1
done
step "selftest h cuzk-ntt" 60 carry/cuzk-ntt selftest --gpu --only h --max-log2 22 $K > $R/selftest-h-cuzk-ntt.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 40 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for round in 1 2; do
  for b in cuzk-main cuzk-ntt cuzk-nttc; do
    bench $b --op ntt --log2 22; bench $b --op ntt --log2 27; bench $b --op h --log2 22; bench $b --op partition --log2 22
  done
done
S="--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis"
step "ncu ntt 27" 60 ncu --clock-control none -k regex:'fr_' -c 4 $S carry/cuzk-ntt bench gpu --op ntt --log2 27 --runs 1 $K > $R/ncu-ntt27.txt 2>&1
step "ncu nttc 27" 60 ncu --clock-control none -k regex:'fr_ntt' -c 3 $S carry/cuzk-nttc bench gpu --op ntt --log2 27 --runs 1 $K > $R/ncu-nttc27.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
