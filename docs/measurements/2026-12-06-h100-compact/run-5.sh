#!/bin/bash
# Device call 5 (what device time allowed of run-4.sh): `cuzk selftest --gpu --only spmv,compact`
# (a, b, c and the row check against the host's; whole proofs of synthetic circuits from their
# compact witness on the GPU against the CPU's from the full path, verified; a changed value
# refused); then 2 KiB PoRep parameters made here and one `cuzk bench prove --pinned --compact`
# (the real partition proved from its compact witness, a, b, c computed on the GPU: the same
# bytes as from a, b, c on the host?). Lands in $OUT/r5.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r5.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"; END=$(( $(date +%s) + 215 )); P=/tmp/cuzk-params; w=$(mktemp -d)
mkdir -p $P $w/parents $w/cache; export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$(( END - $(date +%s) )); [ $left -lt 5 ] && { echo "$name skipped" >> $R/steps.txt; return 1; }
  [ $t -gt $left ] && t=$left; local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" >> $R/steps.txt; return $rc; }
echo "# $C selftest --gpu --only spmv,compact --max-log2 20 $K" > $R/selftest.txt
step selftest 60 $C selftest --gpu --only spmv,compact --max-log2 20 $K >> $R/selftest.txt 2>&1
step params 150 $C params generate --kind porep-c2 --sector-size 2KiB --dir $P > $R/params.log 2>&1
echo "# $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K" > $R/prove.err
CUZK_LOG=info step prove 80 $C bench prove --kind porep-c2 --backend gpu --pinned --compact --params-dir $P $K > $R/prove.json 2>> $R/prove.err
echo "total $(( $(date +%s) - END + 215 ))s" >> $R/steps.txt
