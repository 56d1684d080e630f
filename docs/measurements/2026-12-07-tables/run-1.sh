#!/bin/bash
# Device call 1. carry/cuzk = the build of the fixed-base window tables (2d122b1);
# carry/cuzk-notable = the same build with --no-window-tables (the H MSM without its table).
# In order (each step capped; the last ones skipped if the call runs out of time): the selftest of
# the H query's MSM through its table to 2^22; side by side with supraseal-c2 on one 2 KiB PoRep
# partition, 3 runs alternating; `bench gpu` G1 MSM 2^22 and the synthetic 2^22 partition,
# tables on and off; NTT 2^27 with and without the reorder pass; selftests of NTTs to 2^22 (the
# bit-reversed output too), the plain G1 MSM to 2^18 (the sort's kernels changed) and the witness
# queries with whole g1 sums to 2^20 (h's table beside); a second round of the 2^22 benches;
# G1 MSM 2^26 tables on and off. Everything lands in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-560}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-table 120 carry/cuzk selftest --gpu --only table --max-log2 22 $K > $R/selftest-table.txt 2>&1
mkdir -p $R/side
OUT=$R/side step side-by-side 240 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk carry/cuzk-notable > $R/side/side.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 60 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for b in cuzk cuzk-notable; do bench $b --op msm --log2 22; bench $b --op partition --log2 22; done
bench cuzk --op ntt --log2 27; bench cuzk --op ntt-bit-reversed --log2 27
step selftest-ntt 40 carry/cuzk selftest --gpu --only ntt --max-log2 22 $K > $R/selftest-ntt.txt 2>&1
step selftest-g1 60 carry/cuzk selftest --gpu --only g1 --max-log2 18 $K > $R/selftest-g1.txt 2>&1
step selftest-queries 60 carry/cuzk selftest --gpu --only queries --max-log2 20 $K > $R/selftest-queries.txt 2>&1
for b in cuzk cuzk-notable; do bench $b --op msm --log2 22; bench $b --op partition --log2 22; done
for b in cuzk cuzk-notable; do bench $b --op msm --log2 26; done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
