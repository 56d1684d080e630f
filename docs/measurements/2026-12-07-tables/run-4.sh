#!/bin/bash
# Device call 4. carry/cuzk = 5515c8e (the ones' partial sums folded 16 ways a launch), carry/cuzk-tables
# = call 1's build (2d122b1); carry/folds-pinned and carry/tables-pinned run them with --pinned.
# 1. selftests of the new build: G1 and G2 MSMs to 2^18 (the ones' sums), the witness queries and
# whole g1 sums to 2^20; 2. 2 KiB PoRep parameters; 3. side by side with supraseal-c2 from the
# page-locked pool, 3 runs alternating. Everything lands in $OUT/r4.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r4.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-300}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-msm 40 carry/cuzk selftest --gpu --only g1,g2 --max-log2 18 $K > $R/selftest-msm.txt 2>&1
step selftest-queries 30 carry/cuzk selftest --gpu --only queries --max-log2 20 $K > $R/selftest-queries.txt 2>&1
step params 170 carry/cuzk params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
P=/tmp/cuzk-params OUT=$R/side step side-by-side 120 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/tables-pinned carry/folds-pinned > $R/side/side.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
