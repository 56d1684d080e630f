#!/bin/bash
# Device run G2: side by side with supraseal-c2 (ours now, and the kernels before this session as
# the baseline), then `cuzk bench pipeline --jobs 16` on 2 KiB PoRep before and after, then the
# synthetic 2^27 partition now.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk; B=carry/cuzk-base
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $OUT/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $OUT/steps.txt >&2; return $rc; }
step side-by-side 300 carry/side-by-side.sh $C 3 $B > $OUT/side.txt 2>&1
for i in 1; do
  for bin in $B $C; do
    echo "# $bin bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir /tmp/cuzk-params $K --pce-dir /tmp/pce" >> $OUT/pipeline.err
    step "$bin pipeline $i" 100 $bin bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir /tmp/cuzk-params $K --pce-dir /tmp/pce >> $OUT/pipeline.jsonl 2>> $OUT/pipeline.err
  done
done
step partition27 170 $C bench gpu --op partition --log2 27 --runs 1 $K > $OUT/partition27.jsonl 2>> $OUT/pipeline.err
echo "total $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
