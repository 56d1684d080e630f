#!/bin/bash
# Device call 3 (if there is time), on the same machine as call 1 (target/pce holds the porep-32g PCE).
# 1. 2 KiB PoRep parameters; 2. side by side with supraseal-c2 (carry/supraseal: its tool), 5 runs
# alternating, ours from the page-locked pool as the service proves; 3. `bench gpu`: G1 MSM 2^26
# random with and without the H window table (71 GB: the H200 holds it), NTT 2^27 as h runs it,
# the synthetic 2^27 partition (every query's bases resident); 4. one 32 GiB partition on the full
# synthesis path; 5. `selftest --gpu --only table` to 2^22.
TAR=call-3.tgz; source "$(dirname "$0")/common.sh"; P=target/pce
B=$(mktemp -d); C=$(realpath carry)
printf '#!/bin/sh\nexec %s "$@" --pinned\n' $C/cuzk > $B/cuzk; chmod +x $B/cuzk
step params 170 carry/cuzk params generate --kind porep-c2 --sector-size 2KiB --dir /tmp/cuzk-params > $R/params.log 2>&1
mkdir -p $R/side
P2=/tmp/cuzk-params; OUT=$R/side P=$P2 step side-by-side 120 docs/measurements/2026-12-05-h100-square/side-by-side.sh carry/supraseal 5 $B/cuzk > $R/side/side.txt 2>&1
bench() { local name=$1 t=$2; shift 2; echo "# carry/cuzk bench gpu $* --runs 3 $K" >> $R/bench.err
  step "$name" $t carry/cuzk bench gpu "$@" --runs 3 $K >> $R/bench.jsonl 2>> $R/bench.err; }
bench msm-26 40 --op msm --log2 26; bench msm-26-notable 40 --op msm --log2 26 --no-window-tables
bench ntt-27 30 --op ntt-bit-reversed --log2 27
bench partition-27 100 --op partition --log2 27 --pinned
run synth-full 150 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths full --runs 1 --pce-dir $P
step selftest-table 60 carry/cuzk selftest --gpu --only table --max-log2 22 $K > $R/selftest-table.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
