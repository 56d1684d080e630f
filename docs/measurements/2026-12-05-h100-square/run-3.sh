#!/bin/bash
# Device call 3 (what the device time left allowed; run-2.sh never got a machine): the synthetic
# 2^22 partition of `bench gpu`, carry/cuzk (e7a9e81) and carry/cuzk2 (2530d6d: the compute stream
# at the highest priority, milestones at debug) alternating, 3 rounds, CUZK_LOG=info,cuzk=debug.
# Everything lands in $OUT/r3.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv") CUZK_LOG=info,cuzk=debug
R=$(mktemp -d); trap 'tar czf $OUT/r3.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
for round in 1 2 3; do
  for b in cuzk cuzk2; do
    echo "# round $round: carry/$b bench gpu --op partition --log2 22 --runs 3 $K" >> $R/bench-$b.err
    timeout 20 carry/$b bench gpu --op partition --log2 22 --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err
    echo "$b round $round rc $?" >> $R/steps.txt
  done
done
