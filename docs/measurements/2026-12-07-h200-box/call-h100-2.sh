#!/bin/bash
# Device call on call-h100.sh's machine, warm (the porep-32g PCE in target/pce): `bench pipeline
# --rehearse`, 5 jobs, four in progress at once and 16 partitions ahead of the prover.
TAR=call-h100-2.tgz; source "$(dirname "$0")/../2026-12-07-h200/common.sh"; P=target/pce
LOG=info CUZK_MEMORY__PINNED=false run pipeline-5 ${BUDGET:-330} carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 5 --workers 4 --depth 16 --backend gpu --pce-dir $P $K
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
