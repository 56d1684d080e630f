#!/bin/bash
# Device call 1 of the page-locked pool: upload rates from the heap (through the staging halves)
# and from the registered pool at 2^22 and 2^27; the synthetic 2^22 partition with and without
# its vectors in the pool; supraseal-c2 side by side with `cuzk bench prove` (heap) and
# `cuzk bench prove --pinned` (carry/cuzk-pinned), alternating; `cuzk bench pipeline --jobs 16`
# with memory.pinned off and on, alternating. Everything lands in $OUT/r1.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r1.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"; END=$(( $(date +%s) + 570 ))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
ulimit -l >> $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$(( END - $(date +%s) )); [ $left -lt 5 ] && { echo "$name skipped" >> $R/steps.txt; return 1; }
  [ $t -gt $left ] && t=$left; local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" >> $R/steps.txt; return $rc; }
step transfer22 60 $C bench gpu --op transfer --log2 22 --runs 3 $K > $R/transfer22.json 2> $R/transfer22.err
for p in "" --pinned "" --pinned; do
  step "partition22$p" 60 $C bench gpu --op partition --log2 22 --runs 5 $p $K >> $R/partition22.jsonl 2>> $R/partition22.err
done
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side P=/tmp/cuzk-params step side-by-side 260 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk carry/cuzk-pinned > $R/side/side.txt 2>&1
for pinned in false true false true; do
  echo "# CUZK_MEMORY__PINNED=$pinned CUZK_MEMORY__PINNED_BYTES=8589934592 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu --params-dir /tmp/cuzk-params $K --pce-dir /tmp/pce" >> $R/pipeline.err
  CUZK_MEMORY__PINNED=$pinned CUZK_MEMORY__PINNED_BYTES=8589934592 CUZK_LOG=info step "pipeline pinned=$pinned" 90 $C bench pipeline --jobs 16 --kind porep-c2 --backend gpu \
    --params-dir /tmp/cuzk-params $K --pce-dir /tmp/pce >> $R/pipeline.jsonl 2>> $R/pipeline.err
done
step transfer27 120 $C bench gpu --op transfer --log2 27 --runs 2 $K > $R/transfer27.json 2> $R/transfer27.err
echo "total $(( $(date +%s) - END + 570 ))s" >> $R/steps.txt
