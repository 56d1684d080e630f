#!/bin/bash
# Device call 1 (an H200 box, asked for with needs_h200: the 32 GiB set's bases, 47.4 GB, stay
# resident only on a 141 GB card). carry/cuzk.xz is main's `cuzk` at f0cf1ea.
# 1. The porep-32g PCE extracted into target/pce; 2. `bench pipeline --rehearse`, 4 jobs, three in
# progress at once and 15 partitions ahead of the prover (the H100 box's call 3 of
# ../2026-12-07-h200, for a comparison); 3. one 32 GiB partition on the full path (every
# constraint built), the compact path beside it.
TAR=call-1.tgz; source "$(dirname "$0")/../2026-12-07-h200/common.sh"; P=target/pce; mkdir -p $P
[ -f $P/porep-32g.pce ] || run extract 200 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-4 300 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 4 --workers 3 --depth 15 --backend gpu --pce-dir $P $K
run synth-full 200 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths full,compact --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
