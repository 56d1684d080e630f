#!/bin/bash
# Device call 2 (call 1's machine was given back): carry/cuzk.xz is main at 90b67ee or later
# (the random parameter set made a block at a time). 1. The porep-32g PCE extracted into
# target/pce; 2. `bench pipeline --rehearse`, 1 job, its 10 partitions at once (a 32 GiB
# partition synthesizes on one core for ~40 s while the GPU proves one in ~3 s: the derived
# depth, 6, is the 2 KiB figure), no page-locked pool. Trimmed to the device time left.
TAR=call-2.tgz; source "$(dirname "$0")/common.sh"; P=target/pce; mkdir -p $P
[ -f $P/porep-32g.pce ] || run extract 200 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-1 170 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 1 --workers 1 --depth 10 --backend gpu --pce-dir $P $K
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
