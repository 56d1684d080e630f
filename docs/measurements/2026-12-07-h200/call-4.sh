#!/bin/bash
# Device call 4 (the same warm machine): the SnapDeals and WindowPoSt 32 GiB PCEs extracted (timed),
# then one partition of each synthesized on the compact and PCE paths (the witness's 0/1 mix,
# the PCE's load time). Trimmed to the device time left.
TAR=call-4.tgz; source "$(dirname "$0")/common.sh"; P=target/pce
run extract-snap 170 carry/cuzk pce extract --kind snap-deals --sector-size 32GiB --dir $P
run extract-wpost 170 carry/cuzk pce extract --kind window-post --sector-size 32GiB --dir $P
run synth 300 carry/cuzk bench synth --kinds snap-deals,window-post --rehearse --sector-size 32GiB --paths compact,pce --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
