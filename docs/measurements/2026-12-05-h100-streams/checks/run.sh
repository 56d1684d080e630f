#!/bin/bash
# Device run F: the side-stream commits checked (side by side with supraseal-c2 against the session's
# starting binary, proof against the CPU backend, selftest to 2^22, pipeline before/after), then
# kernel variants of the accumulation (one binary, a kernel cache per variant: carry/kv/<name>/)
# timed on G1 2^22 and G2 2^20 MSMs and a 2^22 partition, each checked by a selftest to 2^16;
# an ncu profile of the NTT passes of 2^22.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=$(realpath carry/cuzk); B=$(realpath carry/cuzk-base)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
for v in old b4 b3 b2 b4g2v; do
  KV="--kernel-cache carry/kv/$v"
  step "selftest-16 $v" 40 $C selftest --gpu --max-log2 16 $KV > $OUT/selftest16-$v.txt 2>&1
  for a in "--op msm --log2 22" "--op msm --curve g2 --log2 20" "--op partition --log2 22"; do
    echo "# $v: $C bench gpu $a --runs 5 $KV" >> $OUT/variants.err
    step "$v bench $a" 40 $C bench gpu $a --runs 5 $KV | sed "s/^{/{\"variant\":\"$v\",/" >> $OUT/variants.jsonl 2>> $OUT/variants.err
  done
done
echo "variants $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
step side-by-side 240 carry/side-by-side.sh $C 3 $B > $OUT/side.txt 2>&1
P=/tmp/cuzk-params; w=$(mktemp -d); mkdir -p $w/parents $w/cache
export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache ORACLE_MINER_ID=1000 ORACLE_SECTOR=3
for s in pc1 pc2 c1; do WORK=$w/s carry/supraseal-c2-bench $s > $w/$s.log 2>&1; done
python3 carry/c1-to-api.py $w/s 3
step prove-compare-cpu 40 $C bench prove --kind porep-c2 --c1 $w/s/c1-api.json --miner-id 1000 --sector-number 3 \
  --backend gpu --compare cpu --params-dir $P $K > $OUT/prove-compare-cpu.json 2> $OUT/prove.err
step selftest-22 100 $C selftest --gpu --max-log2 22 $K > $OUT/selftest.txt 2>&1
for run in "$B" "$C --finish held"; do
  echo "# $run bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce" >> $OUT/pipeline.err
  step "$run pipeline" 40 $run bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce >> $OUT/pipeline.jsonl 2>> $OUT/pipeline.err
done
step ncu-ntt 45 ncu --clock-control none -k regex:fr_ntt_tiles -c 3 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section InstructionStats $C bench gpu --op ntt --log2 22 --runs 1 $K > $OUT/ncu-ntt.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt >&2
