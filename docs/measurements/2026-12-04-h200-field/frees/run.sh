#!/bin/bash
# Device run K: where h's time goes at 2^22 (debug milestones of the host side).
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
K="--kernel-cache carry/kernels"; C=carry/cuzk
for a in "--op h --log2 22" "--op partition --log2 22"; do
  CUZK_LOG=debug $C bench gpu $a --runs 2 $K > $OUT/$(echo $a | tr -d ' -').json 2> $OUT/$(echo $a | tr -d ' -').log
done
nproc; free -g; grep -m1 "model name" /proc/cpuinfo
