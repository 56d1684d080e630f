#!/bin/bash
# Device call 2: the kernels' figures on today's main (unchanged kernels, a, b, c from the
# page-locked pool where --pinned): `cuzk selftest --gpu` to 2^24, G1 MSMs at 2^22, 2^24, 2^26
# with random and witness-shaped scalars, the NTT at 2^27, the synthetic 2^27 partition with its
# vectors in the pool, then on the heap. Everything lands in $OUT/r2.tgz.
cd "$(dirname "$0")/../../.."
R=$(mktemp -d); trap 'tar czf $OUT/r2.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
C=carry/cuzk; K="--kernel-cache carry/kernels"; END=$(( $(date +%s) + 570 ))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,driver_version --format=csv > $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$(( END - $(date +%s) )); [ $left -lt 5 ] && { echo "$name skipped" >> $R/steps.txt; return 1; }
  [ $t -gt $left ] && t=$left; local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" >> $R/steps.txt; return $rc; }
for a in "--op msm --log2 22" "--op msm --log2 24" "--op msm --log2 26" "--op msm --log2 22 --scalars witness" \
         "--op msm --log2 24 --scalars witness" "--op msm --log2 26 --scalars witness" "--op ntt --log2 27 --runs 5"; do
  echo "# $C bench gpu $a $K" >> $R/bench.err
  step "bench $a" 60 $C bench gpu $a $K >> $R/bench.jsonl 2>> $R/bench.err
done
step "partition27 --pinned" 110 $C bench gpu --op partition --log2 27 --runs 2 --pinned $K > $R/partition27-pinned.json 2> $R/partition27-pinned.err
step selftest-24 215 $C selftest --gpu --max-log2 24 $K > $R/selftest-24.txt 2>&1
step "partition27" 110 $C bench gpu --op partition --log2 27 --runs 2 $K > $R/partition27.json 2> $R/partition27.err
echo "total $(( $(date +%s) - END + 570 ))s" >> $R/steps.txt
