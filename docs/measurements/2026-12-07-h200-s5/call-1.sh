#!/bin/bash
# Device call 1 (a fresh machine; asked for as an H200 with needs_h200). carry/cuzk.xz is main's
# `cuzk` at f0cf1ea (the prover, engine and bench unchanged since). 1. The porep-32g PCE extracted
# into target/pce (kept on the machine for call 2); 2. one 32 GiB partition synthesized on the
# full path (every constraint built), the compact and PCE paths beside it, 16 cores.
TAR=call-1.tgz; source "$(dirname "$0")/../2026-12-07-h200/common.sh"; P=target/pce; mkdir -p $P
[ -f $P/porep-32g.pce ] || run extract 220 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
run synth 340 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths full,compact,pce --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
