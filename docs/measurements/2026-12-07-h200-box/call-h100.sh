#!/bin/bash
# Device call on whatever 16-core box is lent (an H100 when the H200 is not): one 32 GiB PoRep
# partition synthesized on the full path (every constraint built and evaluated), the compact
# path beside it; the porep-32g PCE extracted first into target/pce. carry/cuzk.xz is main's
# `cuzk` at f0cf1ea.
TAR=call-h100.tgz; source "$(dirname "$0")/../2026-12-07-h200/common.sh"; P=target/pce; mkdir -p $P
[ -f $P/porep-32g.pce ] || run extract 200 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
run synth-full 330 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths full,compact --runs 1 --pce-dir $P
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
