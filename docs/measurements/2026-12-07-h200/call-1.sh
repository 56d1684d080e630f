#!/bin/bash
# Device call 1 (the H200 box: 16 cores, 128 GiB, 141 GB GPU): the 32 GiB rehearsal.
# carry/cuzk.xz: main's `cuzk` at e4e4e75 (release, stripped: compact partitions reserved from
# the PCE's proven bits); carry/kernels: its cubins.
# 1. The porep-32g PCE extracted (timed) into target/pce, kept on the machine for the next call.
# 2. `bench pipeline --rehearse`, 3 jobs: 10-partition proofs of rehearsal sectors through the
#    real engine and the GPU, a random parameter set of the circuit's shape standing for the file;
#    no page-locked pool (a compact partition leases none).
# 3. One 32 GiB PoRep partition synthesized on 16 cores, compact and PCE paths.
TAR=call-1.tgz; source "$(dirname "$0")/common.sh"; P=target/pce; mkdir -p $P
run extract 220 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-3 330 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs 3 --backend gpu --pce-dir $P $K
run synth 150 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths compact,pce --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
