#!/bin/bash
# Device call 2. Binaries: carry/cuzk-head = 9a517fa (the session's start); carry/cuzk-kern = the
# start with 43fcb61's kernels (Fr's reduction rows, the NTT's table of lowest-stage twiddles: main
# after the sort's revert: a35ec90); carry/cuzk-main = f3dd44b (that and the compute stream at the highest
# priority again); carry/cuzk-sort = a1a6c4d (call 1's sort build, for ncu). 1. side by side with
# supraseal-c2, 3 runs alternating (each build's first log at debug kept); 2. `bench gpu` NTT 2^27
# and the synthetic 2^22 partition, builds alternating; 3. ncu of the sort kernels of a G1 MSM of
# 2^22, both sorts. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-400}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
mkdir -p $R/side
CUZK_LOG=info,cuzk=debug OUT=$R/side step side-by-side 220 docs/measurements/2026-12-05-h100-square/side-by-side.sh \
  carry/supraseal 3 carry/cuzk-head carry/cuzk-kern carry/cuzk-main > $R/side/side.txt 2>&1
bench() { local b=$1; shift; echo "# carry/$b bench gpu $* --runs 3 $K" >> $R/bench-$b.err
  step "$b $*" 30 carry/$b bench gpu "$@" --runs 3 $K >> $R/bench-$b.jsonl 2>> $R/bench-$b.err; }
for round in 1 2; do
  for b in cuzk-head cuzk-kern cuzk-main; do bench $b --op ntt --log2 27; bench $b --op partition --log2 22; done
done
S="--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats"
step ncu-sort 60 ncu --clock-control none -k regex:'msm_group|scan_' -c 7 $S carry/cuzk-sort bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-sort.txt 2>&1
step ncu-head 45 ncu --clock-control none -k regex:'msm_histogram|msm_scatter|scan_' -c 5 $S carry/cuzk-head bench gpu --op msm --log2 22 --runs 1 $K > $R/ncu-head.txt 2>&1
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
