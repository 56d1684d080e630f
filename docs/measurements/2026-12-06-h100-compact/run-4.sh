#!/bin/bash
# Device call 4: the compact witness on the GPU. `cuzk selftest --gpu --only spmv,compact` (a, b, c
# and the row check against the host's, one value changed caught; whole synthetic proofs from the
# compact witness against the CPU's full path, verified); 2 KiB PoRep parameters made here;
# `cuzk bench prove --compact` (the partition proved from a, b, c on the host and from its
# compact witness, a, b, c computed on the GPU: same bytes?), one run; `cuzk bench pipeline
# --jobs 16` with proving.compact_witness off and on, alternating. Lands in $OUT/r4.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r4.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"; END=$(( $(date +%s) + 480 )); P=/tmp/cuzk-params; w=$(mktemp -d)
mkdir -p $P $w/parents $w/cache; export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$(( END - $(date +%s) )); [ $left -lt 5 ] && { echo "$name skipped" >> $R/steps.txt; return 1; }
  [ $t -gt $left ] && t=$left; local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" >> $R/steps.txt; return $rc; }
echo "# $C selftest --gpu --only spmv,compact --max-log2 20 $K" > $R/selftest.txt
step selftest 90 $C selftest --gpu --only spmv,compact --max-log2 20 $K >> $R/selftest.txt 2>&1
step params 200 $C params generate --kind porep-c2 --sector-size 2KiB --dir $P > $R/params.log 2>&1
for i in 1; do
  echo "# $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K" >> $R/prove.err
  CUZK_LOG=info step "prove $i" 80 $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K >> $R/prove.jsonl 2>> $R/prove.err
done
for compact in false true; do
  echo "# CUZK_PROVING__COMPACT_WITNESS=$compact CUZK_MEMORY__PINNED_BYTES=8589934592 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir $P $K --pce-dir /tmp/pce" >> $R/pipeline.err
  CUZK_PROVING__COMPACT_WITNESS=$compact CUZK_MEMORY__PINNED_BYTES=8589934592 CUZK_LOG=info step "pipeline compact=$compact" 90 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu \
    --params-dir $P $K --pce-dir /tmp/pce >> $R/pipeline.jsonl 2>> $R/pipeline.err
done
echo "total $(( $(date +%s) - END + 480 ))s" >> $R/steps.txt
