#!/bin/bash
# Device call 1 of the 32 GiB rehearsal (H200 box: 16 cores, 128 GiB, 141 GB GPU).
# carry/cuzk.xz: this commit's `cuzk` (release, stripped); carry/kernels: its cubins.
# 1. The porep-32g PCE extracted (timed). 2. One 32 GiB PoRep partition synthesized on 16 cores:
#    compact, PCE (host SpMV) and full paths. 3. `bench pipeline --rehearse`: 10-partition proofs
#    of rehearsal sectors through the real engine and the GPU, with a random parameter set of the
#    circuit's shape standing for the file; no page-locked pool (a compact partition leases none).
#    GPU use and memory sampled by nvidia-smi every 500 ms, host memory by free every second.
# Everything lands in $OUT/rehearsal.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/rehearsal.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-575})); P=/tmp/pce
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt; nproc >> $R/steps.txt; free -g >> $R/steps.txt
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 > $R/gpu.csv 2>&1 &
(while :; do echo "$(date +%s) $(free -b | awk '/Mem:/{print $3, $6}')"; sleep 1; done) > $R/host-mem.txt &
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s at $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2; return $rc; }
run() { local name=$1 t=$2; shift 2; echo "# $*" > $R/$name.err; CUZK_LOG=${LOG:-info} step $name $t "$@" > $R/$name.json 2>> $R/$name.err; }
run extract 200 carry/cuzk pce extract --kind porep-c2 --sector-size 32GiB --dir $P
run synth 170 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths compact,pce,full --runs 1 --pce-dir $P
for jobs in 1 3; do
  LOG=info,cuzk::gpu=debug CUZK_MEMORY__PINNED=false run pipeline-$jobs 330 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs $jobs --backend gpu --pce-dir $P $K
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
