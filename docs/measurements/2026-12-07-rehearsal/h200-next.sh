#!/bin/bash
# The next device call for the 32 GiB rehearsal (not run: no device time was left). For the
# H200 box (16 cores, 128 GiB, 141 GB GPU). carry/cuzk.xz = main at 51abfd4 or later (stripped),
# carry/kernels its cubins. 1. One 32 GiB PoRep partition's synthesis on 16 cores, compact and
# PCE paths (the PCE extracted first, ~140 s). 2. `bench pipeline --rehearse`: 10-partition
# proofs of rehearsal sectors through the real engine and the GPU, with a random parameter set
# of the circuit's shape (~51 GB on the host) standing for the file; a 16 GiB page-locked pool.
# Everything lands in $OUT/rehearsal.tgz.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'tar czf $OUT/rehearsal.tgz -C $R .' EXIT
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" carry/cuzk.xz; chmod +x carry/cuzk
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-570}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt; nproc >> $R/steps.txt; free -g >> $R/steps.txt
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s" | tee -a $R/steps.txt >&2; return $rc; }
echo "# carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths compact,pce --runs 2 --pce-dir /tmp/pce" > $R/synth.err
CUZK_LOG=info step synth 260 carry/cuzk bench synth --kinds porep-c2 --rehearse --sector-size 32GiB --paths compact,pce --runs 2 --pce-dir /tmp/pce > $R/synth.json 2>> $R/synth.err
for jobs in 1 3; do
  echo "# CUZK_MEMORY__PINNED_BYTES=17179869184 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB --jobs $jobs --backend gpu --pce-dir /tmp/pce $K" >> $R/pipeline.err
  CUZK_MEMORY__PINNED_BYTES=17179869184 CUZK_LOG=info step "pipeline $jobs" 300 carry/cuzk bench pipeline --rehearse --kind porep-c2 --sector-size 32GiB \
    --jobs $jobs --backend gpu --pce-dir /tmp/pce $K >> $R/pipeline.jsonl 2>> $R/pipeline.err
done
echo "total $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2
