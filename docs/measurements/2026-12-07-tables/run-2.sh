#!/bin/bash
# Device call 2 (the machine of call 1, warm; its parameters in /tmp/cuzk-params kept). Binaries as
# call 1's. 1. side by side with supraseal-c2, 5 more runs alternating; 2. `bench prove --compact`
# (the service's default path: a, b, c computed on the GPU from the compact witness), tables on,
# then off. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
for f in carry/*.xz; do [ -x ${f%.xz} ] || { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; }; done
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; mkdir -p $R/side
OUT=$R/side timeout 200 docs/measurements/2026-12-05-h100-square/side-by-side.sh carry/supraseal 5 carry/cuzk carry/cuzk-notable > $R/side/side.txt 2>&1
echo "side rc $?" >> $R/steps.txt
for b in cuzk cuzk-notable; do
  FIL_PROOFS_PARAMETER_CACHE=/tmp/cuzk-params timeout 120 carry/$b bench prove --kind porep-c2 --backend gpu --pinned --compact \
    --params-dir /tmp/cuzk-params $K > $R/prove-$b.json 2> $R/prove-$b.err; echo "prove $b rc $?" >> $R/steps.txt
done
