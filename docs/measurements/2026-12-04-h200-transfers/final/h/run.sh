#!/bin/bash
# Device run H: one 2 KiB PoRep partition proved by the GPU and the CPU backend with the same r, s
# (`cuzk bench prove --compare cpu`: byte-identical, verified), then G1 MSMs of witness-shaped
# scalars at 2^24 and 2^26.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=$(realpath carry/cuzk)
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
P=/tmp/cuzk-params; w=$(mktemp -d); mkdir -p $P $w/parents $w/cache
export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache ORACLE_MINER_ID=1000 ORACLE_SECTOR=3
step params 170 $C params generate --kind porep-c2 --sector-size 2KiB --dir $P > $w/params.log 2>&1
for s in pc1 pc2 c1; do WORK=$w/s carry/supraseal-c2-bench $s > $w/$s.log 2>&1; done
python3 carry/c1-to-api.py $w/s 3
step prove-compare-cpu 60 $C bench prove --kind porep-c2 --c1 $w/s/c1-api.json --miner-id 1000 --sector-number 3 \
  --backend gpu --compare cpu --params-dir $P $K > $OUT/prove-compare-cpu.json 2> $OUT/bench.err
for l in 24 26; do
  echo "# cuzk bench gpu --op msm --log2 $l --scalars witness --runs 3" >> $OUT/bench.err
  step "msm $l witness" 40 $C bench gpu --op msm --log2 $l --scalars witness --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
