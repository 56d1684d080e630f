#!/bin/bash
# On the device: supraseal-c2 and one or more builds of our GPU prover on the same 2 KiB PoRep
# sector and parameters, alternating: each run proves with supraseal-c2, then with each build.
# Usage (from a carried folder holding supraseal-c2-bench and c1-to-api.py of shared/tools/supraseal):
#   side-by-side.sh TOOLS RUNS PATH/TO/cuzk [PATH/TO/other-cuzk ...]
# With $OUT set, each build's first `cuzk bench prove` JSON (per-stage device times) is copied there
# as prove-NAME.json, its log as prove-NAME.log. Env: P (parameter dir, default /tmp/cuzk-params; made with the first build's
# `cuzk params generate` when empty). Prints one line per run and a JSON summary line last.
set -u
tools=$(realpath "$1"); runs=$2; shift 2; builds=(); for b in "$@"; do builds+=("$(realpath "$b")"); done
nv=$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)
[ -n "$nv" ] && export LD_LIBRARY_PATH=$(dirname "$nv")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
P=${P:-/tmp/cuzk-params}; w=$(mktemp -d); mkdir -p "$P" "$w/parents" "$w/cache"
export FIL_PROOFS_PARAMETER_CACHE=$P FIL_PROOFS_PARENT_CACHE=$w/parents FIL_PROOFS_CACHE_DIR=$w/cache
ls "$P"/*replication*.params >/dev/null 2>&1 || "${builds[0]}" params generate --kind porep-c2 --sector-size 2KiB --dir "$P" >"$w/params.log" 2>&1 \
  || { echo "params generate failed: $(tail -1 "$w/params.log")"; exit 1; }
export ORACLE_MINER_ID=${ORACLE_MINER_ID:-1000} ORACLE_SECTOR=${ORACLE_SECTOR:-3}
for s in pc1 pc2 c1; do WORK=$w/s "$tools/supraseal-c2-bench" $s >"$w/$s.log" 2>&1 || { echo "$s failed"; exit 1; }; done
python3 "$tools/c1-to-api.py" "$w/s" "$ORACLE_SECTOR"
for i in $(seq "$runs"); do
  sup=$(WORK=$w/s "$tools/supraseal-c2-bench" c2 1 2>&1 | grep -o 'prover_s=[0-9.]*' | cut -d= -f2)
  line="run $i: supraseal prover_s=${sup:-failed}"; echo "supraseal ${sup:-failed}" >>"$w/times"
  for b in "${builds[@]}"; do
    name=$(basename "$b")
    "$b" bench prove --kind porep-c2 --c1 "$w/s/c1-api.json" --miner-id "$ORACLE_MINER_ID" --sector-number "$ORACLE_SECTOR" \
      --backend gpu --params-dir "$P" >"$w/$name-$i.json" 2>"$w/$name-$i.log"
    t=$(python3 -c "import json;d=json.load(open('$w/$name-$i.json'));print(d['cuzk']['prove_s'] if d['cuzk'].get('verified') else 'unverified')" 2>/dev/null)
    [ "$i" = 1 ] && [ -n "${OUT:-}" ] && cp "$w/$name-$i.json" "$OUT/prove-$name.json" && cp "$w/$name-$i.log" "$OUT/prove-$name.log"
    line="$line $name prove_s=${t:-failed}"; echo "$name ${t:-failed}" >>"$w/times"
  done
  echo "$line"
done
python3 - "$w/times" <<'PY'
import json, statistics, sys
times = {}
for line in open(sys.argv[1]):
    name, t = line.split()
    try:
        times.setdefault(name, []).append(float(t))
    except ValueError:
        times.setdefault(name, [])
med = {k: statistics.median(v) for k, v in times.items() if v}
out = {"runs": {k: len(v) for k, v in times.items()}, "median_s": med}
if "supraseal" in med:
    out["ratio_to_supraseal"] = {k: v / med["supraseal"] for k, v in med.items() if k != "supraseal"}
print(json.dumps(out))
PY
