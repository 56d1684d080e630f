#!/bin/bash
# On the device: our GPU prover and supraseal-c2 on the same 2 KiB PoRep sector and parameters, alternating.
# Usage (from a carried folder holding this folder's files): side-by-side.sh PATH/TO/cuzk [RUNS] [PATH/TO/BASELINE-cuzk]
# With a baseline cuzk, each run also proves with it (before/after in the same call). With $OUT set,
# the first run's `cuzk bench prove` JSON (per-stage device times) is copied there.
# Env: P (parameter dir, default /tmp/cuzk-params; made with `cuzk params generate` when empty).
# Prints one line per run and a JSON summary line last.
set -u
here=$(cd "$(dirname "$0")" && pwd); cuzk=$(realpath "$1"); runs=${2:-3}; base=${3:+$(realpath "$3")}
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$nv" ] && export LD_LIBRARY_PATH=$(dirname "$nv")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
P=${P:-/tmp/cuzk-params}; w=$(mktemp -d); mkdir -p "$P" "$w/parents" "$w/cache"
export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache
ls "$P"/*replication*.params >/dev/null 2>&1 || "$cuzk" params generate --kind porep-c2 --sector-size 2KiB --dir "$P" >"$w/params.log" 2>&1 \
  || { echo "params generate failed: $(tail -1 "$w/params.log")"; exit 1; }
export ORACLE_MINER_ID=${ORACLE_MINER_ID:-1000} ORACLE_SECTOR=${ORACLE_SECTOR:-3}
for s in pc1 pc2 c1; do WORK=$w/s "$here/supraseal-c2-bench" $s >"$w/$s.log" 2>&1 || { echo "$s failed"; exit 1; }; done
python3 "$here/c1-to-api.py" "$w/s" "$ORACLE_SECTOR"
for i in $(seq "$runs"); do
  sup=$(WORK=$w/s "$here/supraseal-c2-bench" c2 1 2>&1 | grep -o 'prover_s=[0-9.]*' | cut -d= -f2)
  "$cuzk" bench prove --kind porep-c2 --c1 "$w/s/c1-api.json" --miner-id "$ORACLE_MINER_ID" --sector-number "$ORACLE_SECTOR" \
    --backend gpu --params-dir "$P" >"$w/ours-$i.json" 2>"$w/ours-$i.log"
  ours=$(python3 -c "import json;d=json.load(open('$w/ours-$i.json'));print(d['cuzk']['prove_s'] if d['cuzk'].get('verified') else 'unverified')" 2>/dev/null)
  [ "$i" = 1 ] && [ -n "${OUT:-}" ] && cp "$w/ours-$i.json" "$OUT/ours-prove.json"
  line="run $i: supraseal prover_s=${sup:-failed} ours prove_s=${ours:-failed}"
  if [ -n "$base" ]; then
    "$base" bench prove --kind porep-c2 --c1 "$w/s/c1-api.json" --miner-id "$ORACLE_MINER_ID" --sector-number "$ORACLE_SECTOR" \
      --backend gpu --params-dir "$P" >"$w/base-$i.json" 2>"$w/base-$i.log"
    bs=$(python3 -c "import json;d=json.load(open('$w/base-$i.json'));print(d['cuzk']['prove_s'] if d['cuzk'].get('verified') else 'unverified')" 2>/dev/null)
    line="$line baseline prove_s=${bs:-failed}"
    echo "$bs" >>"$w/base"
  fi
  echo "$line"
  echo "$sup $ours" >>"$w/pairs"
done
python3 - "$w/pairs" "$w/base" <<'PY'
import json, os, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
num = lambda x: x.replace('.', '', 1).isdigit()
ok = [(float(a), float(b)) for a, b in rows if num(a) and num(b)]
base = [float(l) for l in open(sys.argv[2]) if num(l.strip())] if os.path.exists(sys.argv[2]) else []
if ok:
    s, o = statistics.median(a for a, _ in ok), statistics.median(b for _, b in ok)
    out = {"runs": len(ok), "supraseal_prover_s_median": s, "ours_prove_s_median": o, "ratio": o / s}
    if base:
        out["baseline_prove_s_median"] = statistics.median(base)
    print(json.dumps(out))
else:
    print(json.dumps({"runs": 0, "error": "no complete run"}))
PY
