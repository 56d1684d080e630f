#!/bin/bash
# Device call 2: why the sort of carry/cuzk-sort (a1a6c4d) is slower than carry/cuzk-head's
# (9a517fa) in call 1: ncu of each sort kernel of a G1 MSM of 2^22 (the bench's warm-up MSM),
# both builds. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
for f in carry/cuzk-head.xz carry/cuzk-sort.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-200}))
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
S="--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats"
step ncu-sort 90 ncu --clock-control none -k regex:'msm_group|scan_' -c 7 $S carry/cuzk-sort bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-sort.txt 2>&1
step ncu-head 60 ncu --clock-control none -k regex:'msm_histogram|msm_scatter|scan_' -c 5 $S carry/cuzk-head bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-head.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
