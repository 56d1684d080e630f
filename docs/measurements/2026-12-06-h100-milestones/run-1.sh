#!/bin/bash
# Device call 1. Binaries: carry/cuzk-head = 9a517fa (the session's start; milestones logged at
# debug); carry/cuzk2 = 2530d6d (the same kernels, identical SASS, with the compute stream at the
# highest priority); carry/cuzk-sort = a1a6c4d (Fr's reduction rows without the multiplier for
# r[0], r[1]; the NTT's lowest-stage twiddles from a table, its stage 0 without products; the MSM
# sort counting in shared memory; the selftest has an MSM sorted in window batches); carry/cuzk-kara
# = 2d9314e (cuzk-sort with the Fp product and a·b - c·d by Karatsuba halves: the branch karatsuba
# cherry-picked, not on main). Each cubin in carry/kernels; the binaries travel xz-compressed.
# 1. selftest of the changed kernels against the CPU (NTT, h, G1 MSMs with edge scalars, the
# witness's queries); 2. `bench gpu` (a round): G1 MSM 2^22 and 2^26, NTT 2^22 and 2^27, the synthetic
# 2^22 partition, builds alternating; 3. side by side with supraseal-c2, 3 runs alternating,
# CUZK_LOG=info,cuzk=debug (each build's first log kept); 4. a second round of 2. Everything lands in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-560}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
N=carry/cuzk-sort
for only in "ntt 22 30" "h 22 40" "g1 20 50" "queries 16 40"; do set -- $only
  step "selftest $1" $3 $N selftest --gpu --only $1 --max-log2 $2 $K > $R/selftest-$1.txt 2>&1
done
step "selftest g1 kara" 30 carry/cuzk-kara selftest --gpu --only g1 --max-log2 16 $K > $R/selftest-g1-kara.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 30 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
round() {
  for b in cuzk-head cuzk-sort cuzk-kara; do
    bench $b --op msm --log2 22; bench $b --op msm --log2 26
  done
  for b in cuzk-head cuzk-sort; do
    bench $b --op ntt --log2 22; bench $b --op ntt --log2 27
  done
  for b in cuzk-head cuzk-sort cuzk-kara cuzk2; do
    CUZK_LOG=info,cuzk=debug bench $b --op partition --log2 22
  done
}
round
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side step side-by-side 300 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk-head carry/cuzk-sort carry/cuzk-kara carry/cuzk2 > $R/side/side.txt 2>&1
round
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
