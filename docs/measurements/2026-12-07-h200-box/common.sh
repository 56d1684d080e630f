# Sourced by call-N.sh: unpacks carry/*.xz, sets LD_LIBRARY_PATH for NVRTC, $R (results, tarred into
# $OUT/$TAR at exit), `step NAME SECONDS CMD...` (timeout, cut to what is left of BUDGET; each
# step's exit code and seconds in steps.txt) and `run NAME SECONDS CMD...` (stdout NAME.json,
# stderr NAME.err headed by the command, CUZK_LOG=${LOG:-info}). Samples the GPU (nvidia-smi,
# 500 ms) and host memory (free, 1 s) for the whole call.
cd "$(dirname "$0")/../../.."
nv=$(find / -name 'libnvrtc.so.13' -not -path '/proc/*' 2>/dev/null | head -1); export LD_LIBRARY_PATH=$(dirname "$nv")
R=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; tar czf $OUT/$TAR -C $R .' EXIT
for f in carry/*.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f; chmod +x ${f%.xz}; done
K="--kernel-cache carry/kernels"; T0=$(date +%s); END=$((T0 + ${BUDGET:-570}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv > $R/steps.txt; nproc >> $R/steps.txt; free -g >> $R/steps.txt
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 > $R/gpu.csv 2>&1 &
(while :; do echo "$(date +%s) $(free -b | awk '/Mem:/{print $3, $6}')"; sleep 1; done) > $R/host-mem.txt &
step() { local name=$1 t=$2; shift 2; local left=$((END - $(date +%s))); [ $left -lt $t ] && t=$left
  [ $t -le 5 ] && { echo "$name skipped (no time)" >> $R/steps.txt; return 1; }
  local s=$(date +%s); timeout $t "$@"; local rc=$?; echo "$name rc $rc $(( $(date +%s)-s ))s at $(( $(date +%s)-T0 ))s" | tee -a $R/steps.txt >&2; return $rc; }
run() { local name=$1 t=$2; shift 2; echo "# $*" > $R/$name.err; CUZK_LOG=${LOG:-info} step $name $t "$@" > $R/$name.json 2>> $R/$name.err; }
