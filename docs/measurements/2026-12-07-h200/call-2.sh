#!/bin/bash
# Device call 2, on the same machine as call 1. carry/cuzk-old.xz: 54fa04d (compact partitions
# reserved for every value neither 0 nor 1; PCE format 1), the same kernels.
# 1. Its porep-32g PCE extracted (format 1) into target/pce-1; 2. `bench pipeline --rehearse`,
# 3 jobs, as call 1 (the before of the reservations from proven bits); 3. 2 KiB PoRep
# parameters and the side by side with supraseal-c2 (carry/supraseal: its tool), 5 runs
# alternating, ours (carry/cuzk) from the page-locked pool as the service proves.
TAR=call-2.tgz; source "$(dirname "$0")/common.sh"; P=target/pce-1; mkdir -p $P
run extract-old 220 carry/cuzk-old pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-3-old 330 carry/cuzk-old bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 3 --backend gpu --pce-dir $P $K
B=$(mktemp -d); C=$(realpath carry)
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk > $B/cuzk; chmod +x $B/cuzk
step params 170 carry/cuzk params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
OUT=$R/side P=/tmp/cuzk-params step side-by-side 120 docs/measurements/2026-12-05-h100-square/side-by-side.sh carry/supraseal 5 $B/cuzk > $R/side/side.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
