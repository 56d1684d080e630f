#!/bin/bash
# Device run O: the tidy commit (the accumulation's bound as a macro): selftest and MSM benches.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk
$C selftest --gpu --max-log2 18 $K > $OUT/selftest.txt 2>&1; echo "selftest rc $?" >&2
for a in "--op msm --log2 22" "--op msm --log2 22 --curve g2"; do
  echo "# $C bench gpu $a --runs 3" >> $OUT/bench.err
  $C bench gpu $a --runs 3 $K >> $OUT/bench.jsonl 2>> $OUT/bench.err
done
