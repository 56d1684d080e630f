#!/bin/bash
# Device call 4. Binaries: carry/cuzk-main = bf6069c (the session's start); carry/cuzk-new = 8baa967
# (the NTT's passes in registers with the twiddle product called, the bit reversal by 32x32 tiles);
# carry/cuzk-rev4 = cuzk-new with 16x16 tiles of the bit reversal (REVERSE_SIDE_LOG 4).
# 1. side by side with supraseal-c2 on one 2 KiB PoRep sector, 3 runs alternating (params made
# first, ~140 s); 2. `bench gpu`, new and rev4 alternating, two rounds: NTT 2^22, 2^27; 3. selftest of
# cuzk-new's NTTs and h to 2^24; 4. cuzk-new's proof against the CPU backend's (byte-identical,
# verified). Everything lands in $OUT/r4.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r4.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-500}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side P=/tmp/cuzk-params step side-by-side 260 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk-main carry/cuzk-new > $R/side/side.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 40 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for round in 1 2; do
  for b in cuzk-new cuzk-rev4; do bench $b --op ntt --log2 22; bench $b --op ntt --log2 27; done
done
step "selftest ntt 24" 60 carry/cuzk-new selftest --gpu --only ntt --max-log2 24 $K > $R/selftest-ntt-24.txt 2>&1
step "selftest h 24" 60 carry/cuzk-new selftest --gpu --only h --max-log2 24 $K > $R/selftest-h-24.txt 2>&1
step "compare cpu" 60 carry/cuzk-new bench prove --kind porep-c2 --backend gpu --compare cpu --params-dir /tmp/cuzk-params > $R/prove-compare-cpu.json 2> $R/prove-compare-cpu.log
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
