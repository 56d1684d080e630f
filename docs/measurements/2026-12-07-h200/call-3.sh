#!/bin/bash
# Device call 3 (call 2's machine, warm: the porep-32g PCE in target/pce): `bench pipeline
# --rehearse`, 4 jobs, three in progress at once and 15 partitions ahead of the prover.
TAR=call-3.tgz; source "$(dirname "$0")/common.sh"; P=target/pce
LOG=info CUZK_MEMORY__PINNED=false run pipeline-4 330 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 4 --workers 3 --depth 15 --backend gpu --pce-dir $P $K
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
