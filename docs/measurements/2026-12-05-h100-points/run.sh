#!/bin/bash
# Device run J: bases made on the device (carry/cuzk-pts = f5e2d5b and the witness fixes after it): selftest of the points
# against the host and of every kernel to 2^16, then `bench gpu` at the sizes whose setup the
# host bases made slow, the 2^27 partition included. Everything lands in $OUT/j.tgz.
cd "$(dirname "$0")/.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/j.tgz -C $R .' EXIT
K="--kernel-cache carry/kernels"; P=$(realpath carry/cuzk-pts)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
T0=$(date +%s)
step() { local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
step selftest-points 150 $P selftest --gpu --only points --max-log2 20 $K > $R/selftest-points.txt 2>&1
step selftest-16 90 $P selftest --gpu --max-log2 16 $K > $R/selftest-16.txt 2>&1
for a in "--op msm --log2 26 --runs 3" "--op msm --log2 22 --curve g2 --runs 3" "--op partition --log2 22 --runs 3" \
         "--op partition --log2 27 --runs 2"; do
  echo "# cuzk bench gpu $a $K" >> $R/bench.err
  step "bench $a" 240 /usr/bin/time -v $P bench gpu $a $K >> $R/bench.jsonl 2>> $R/bench.err
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
