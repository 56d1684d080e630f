#!/bin/bash
# The second call: the kernels' figures at the issue's sizes, one build (N, default
# carry/cuzk-main; run-1 decides whether the folds go in). 1. `selftest --gpu` to 2^24, every
# kernel; 2. `bench gpu`: G1 MSM 2^22, 2^24, 2^26 with random and witness-shaped scalars (tables
# on; 2^26 also off), G2 MSM 2^22, NTT 2^27 both orders, the synthetic 2^22 and 2^27 partitions
# from the page-locked pool. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
N=${N:-carry/cuzk-main}; [ -x $N ] || python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $N.xz; chmod +x $N
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-570}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt; echo "build $N" >> $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-24 200 $N selftest --gpu --max-log2 24 $K > $R/selftest-24.txt 2>&1
bench() { echo "# $N bench gpu $* --runs 3 $K" >> $R/bench.err; step "bench $*" 90 $N bench gpu "$@" --runs 3 $K >> $R/bench.jsonl 2>> $R/bench.err; }
for l in 22 24 26; do for s in random witness; do bench --op msm --log2 $l --scalars $s; done; done
bench --op msm --log2 26 --no-window-tables
bench --op msm --log2 22 --curve g2
bench --op ntt --log2 27; bench --op ntt-bit-reversed --log2 27
bench --op partition --log2 22 --pinned
bench --op partition --log2 27 --pinned
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
