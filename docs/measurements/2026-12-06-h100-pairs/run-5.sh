#!/bin/bash
# Device call 5: call 4's side by side again with the builds' order swapped (carry/cuzk-new first,
# then carry/cuzk-main), to tell an order effect from the NTT's. Lands in $OUT/r5.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r5.tgz -C $R .' EXIT
for f in carry/cuzk-new.xz carry/cuzk-main.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side P=/tmp/cuzk-params timeout 250 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk-new carry/cuzk-main > $R/side/side.txt 2>&1
echo "rc $?" >> $R/side/side.txt
