#!/bin/bash
# Device call 3: the device SpMV (witness_expand, witness_scatter, pce_spmv) against the host's,
# `cuzk selftest --gpu --only spmv` on synthetic circuits of 2^2..2^20 rows. Lands in $OUT/r3.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r3.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
echo "# $C selftest --gpu --only spmv --max-log2 20 $K" > $R/selftest-spmv.txt
timeout 300 $C selftest --gpu --only spmv --max-log2 20 $K >> $R/selftest-spmv.txt 2>&1; echo "selftest rc $?" >> $R/steps.txt
