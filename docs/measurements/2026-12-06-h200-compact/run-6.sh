#!/bin/bash
# Device call 6 (H200): the three synthesis paths of a 2 KiB PoRep partition on the GPU box.
# `cuzk bench synth --compare full` (host bytes per path: held, peak RSS growth of one synthesis,
# the engine's reservation); 2 KiB PoRep parameters made here; `cuzk bench prove --pinned
# --compact` (full path, PCE with the host's SpMV, compact witness with a, b, c on the GPU:
# same bytes? verified?); `cuzk bench pipeline --jobs 16` with proving.compact_witness off and
# on, alternating, twice. Lands in $OUT/r6.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r6.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"; END=$(( $(date +%s) + ${BUDGET_S:-400} )); P=/tmp/cuzk-params; w=$(mktemp -d)
mkdir -p $P $w/parents $w/cache; export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$(( END - $(date +%s) )); [ $left -lt 5 ] && { echo "$name skipped" >> $R/steps.txt; return 1; }
  [ $t -gt $left ] && t=$left; local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" >> $R/steps.txt; return $rc; }
echo "# $C bench synth --kinds porep-c2,snap-deals --compare full --runs 3 --pce-dir /tmp/pce-synth" > $R/synth.err
step synth 60 $C bench synth --kinds porep-c2,snap-deals --compare full --runs 3 --pce-dir /tmp/pce-synth > $R/synth.json 2>> $R/synth.err
step params 170 $C params generate --kind porep-c2 --sector-size 2KiB --dir $P > $R/params.log 2>&1
echo "# $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K" > $R/prove.err
CUZK_LOG=info step prove 60 $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K > $R/prove.json 2>> $R/prove.err
for round in 1 2; do for compact in false true; do
  echo "# CUZK_PROVING__COMPACT_WITNESS=$compact CUZK_MEMORY__PINNED_BYTES=8589934592 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce" >> $R/pipeline.err
  CUZK_PROVING__COMPACT_WITNESS=$compact CUZK_MEMORY__PINNED_BYTES=8589934592 CUZK_LOG=info step "pipeline compact=$compact" 45 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu \
    --params-dir $P $K --pce-dir /tmp/pce >> $R/pipeline.jsonl 2>> $R/pipeline.err
done; done
echo "total $(( $(date +%s) - END + ${BUDGET_S:-400} ))s" >> $R/steps.txt
