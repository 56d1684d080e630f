#!/bin/bash
# Device call 2 (call 1's machine, warm: the porep-32g PCE in target/pce): `bench pipeline
# --rehearse`, 6 whole 32 GiB proofs back to back, four in progress at once and 15 partitions
# ahead of the prover (one core each), no page-locked pool (as the H100 box's 47.8 s/proof run,
# ../2026-12-07-h200/call-3.sh, with more proofs to spread the first proof's ramp over).
TAR=call-2.tgz; source "$(dirname "$0")/../2026-12-07-h200/common.sh"; P=target/pce
[ -f $P/porep-32g.pce ] || run extract 220 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-6 570 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 6 --workers 4 --depth 15 --backend gpu --pce-dir $P $K
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
