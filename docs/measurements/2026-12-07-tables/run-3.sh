#!/bin/bash
# Device call 3 (the machine of calls 1 and 2, warm). Side by side with supraseal-c2, 5 runs
# alternating, ours proving from the page-locked pool as the service does: carry/cuzk-pinned =
# call 1's build with --pinned, carry/cuzk-pinned-notable = with --pinned --no-window-tables.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r3.tgz -C $R .' EXIT
for f in carry/*.xz; do [ -x ${f%.xz} ] || { python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; }; done
mkdir -p $R/side
OUT=$R/side timeout 200 docs/measurements/2026-12-05-h100-square/side-by-side.sh carry/supraseal 5 carry/cuzk-pinned carry/cuzk-pinned-notable > $R/side/side.txt 2>&1
echo "side rc $?" >> $R/steps.txt
