#!/bin/bash
# Side by side on this 2-core machine (the clients on it too): `cuzk bench load` (300
# submissions at 50 and at 300 clients, no queue phase) with each build given, alternating,
# $ROUNDS rounds (default 3); one JSON file per run in ab/, a line per build and phase.
# The builds measured (docs/measurements/2026-12-07-load/README.md): before the checks were held
# to one a core, with that, and with the health-check reserve past api.max_connections too.
set -eu
out=$(dirname "$0")/ab; mkdir -p $out
for i in $(seq ${ROUNDS:-3}); do
  for b in "$@"; do
    "$b" bench load --submissions 300 --concurrency 50,300 --queued 0 --params-dir /var/tmp/cuzk-test-params > $out/$(basename $b)-$i.json 2>/dev/null
  done
done
python3 - "$out" <<'PY'
import json, sys, glob, os
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    name = os.path.basename(f).rsplit("-", 1)[0]
    for p in json.load(open(f))["phases"]:
        r = p["result"]
        rows.setdefault((name, p["clients"]), []).append(r)
def col(runs, f, w=6):
    return " ".join(f"{f(r):{w}.1f}" for r in runs)
for (name, clients), runs in sorted(rows.items()):
    print(f"{name:20} clients {clients:3}: healthz p99 {col(runs, lambda r: r['healthz_ms']['p99'])} | p50 {col(runs, lambda r: r['healthz_ms']['p50'], 5)}"
          f" | submit p50 {col(runs, lambda r: r['submit_ms']['p50'])} p99 {col(runs, lambda r: r['submit_ms']['p99'])}"
          f" | job status p99 {col(runs, lambda r: r['job_status_ms']['p99'])} | statuses {[r['statuses'] for r in runs]}")
PY
