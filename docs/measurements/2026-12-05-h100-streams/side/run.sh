#!/bin/bash
# Device run G (warm machine of run F): kernel variants of the accumulation (one binary, a kernel cache
# per variant: carry/kv/<name>/) timed on G1 2^22 and G2 2^20 MSMs and a 2^22 partition, alternating
# in two rounds, each checked by a selftest to 2^18; side by side with supraseal-c2 (ours now and the
# session's starting binary); pipeline before/after. Everything lands in $OUT/g.tgz.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/g.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; C=$(realpath carry/cuzk); B=$(realpath carry/cuzk-base)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
for round in 1 2; do
  for v in old b4 b3 b2 b4g2v; do
    KV="--kernel-cache carry/kv/$v"
    for a in "--op msm --log2 22" "--op msm --curve g2 --log2 20" "--op partition --log2 22"; do
      echo "# $v: $C bench gpu $a --runs 5 $KV" >> $R/variants.err
      step "$v bench $a" 40 $C bench gpu $a --runs 5 $KV | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> $R/variants.jsonl 2>> $R/variants.err
    done
  done
done
for v in b4 b3 b2 b4g2v; do
  step "selftest-18 $v" 60 $C selftest --gpu --max-log2 18 --kernel-cache carry/kv/$v > $R/selftest18-$v.txt 2>&1
done
echo "variants $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
OUT=$R step side-by-side 200 carry/side-by-side.sh $C 3 $B > $R/side.txt 2>&1
P=/tmp/cuzk-params
for run in "$B bench pipeline" "$C bench pipeline --finish cpu" "$C bench pipeline --finish held"; do
  echo "# $run --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce" >> $R/pipeline.err
  step "$run" 40 $run --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce >> $R/pipeline.jsonl 2>> $R/pipeline.err
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
