#!/bin/bash
# Device run A: side by side with supraseal-c2 (ours now and HEAD's binary as the baseline, alternating),
# proofs against the CPU backend, the selftest to 2^22.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=$(realpath carry/cuzk); B=$(realpath carry/cuzk-base)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
step side-by-side 330 carry/side-by-side.sh $C 3 $B > $OUT/side.txt 2>&1
P=/tmp/cuzk-params; w=$(mktemp -d); mkdir -p $w/parents $w/cache
export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache ORACLE_MINER_ID=1000 ORACLE_SECTOR=3
for s in pc1 pc2 c1; do WORK=$w/s carry/supraseal-c2-bench $s > $w/$s.log 2>&1; done
python3 carry/c1-to-api.py $w/s 3
step prove-compare-cpu 60 $C bench prove --kind porep-c2 --c1 $w/s/c1-api.json --miner-id 1000 --sector-number 3 \
  --backend gpu --compare cpu --params-dir $P $K > $OUT/prove-compare-cpu.json 2> $OUT/prove.err
step selftest-22 150 $C selftest --gpu --max-log2 22 $K > $OUT/selftest.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
