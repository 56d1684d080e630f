#!/bin/bash
# Device call 2 (a fresh machine): carry/cuzk.xz is main's `cuzk` with the random parameter set
# made a block at a time (one inversion per 4,096 points). 1. The porep-32g PCE extracted into
# target/pce (kept on the machine for call 3); 2. `bench pipeline --rehearse`, 3 jobs, two in
# progress at once and 14 partitions ahead of the prover (a 32 GiB partition synthesizes on one
# core for ~40 s while the GPU proves one in ~3 s: the derived depth, 6, is the 2 KiB figure),
# no page-locked pool (a compact partition leases none); 3. one 32 GiB partition synthesized on
# the compact and PCE paths (the witness's 0/1 mix, the PCE's load time).
TAR=call-2.tgz; source "$(dirname "$0")/common.sh"; P=target/pce; mkdir -p $P
[ -f $P/porep-32g.pce ] || run extract 200 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-3 300 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 3 --workers 2 --depth 14 --backend gpu --pce-dir $P $K
run synth 250 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths compact,pce --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
