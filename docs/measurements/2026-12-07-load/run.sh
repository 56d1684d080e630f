#!/bin/bash
# The load figures on this 2-core machine (the clients on it too), with the build given as $1:
# `cuzk bench load` (300 submissions at 50 and at 300 clients; the queue filled to 1,000 jobs,
# then 300 past it), once on the disk as it is (load.json) and once with every fsync of the
# service 0.4 s (slow-disk.json: tests/shims/slowsync.c preloaded).
set -eu
here=$(dirname "$0"); cuzk=$1; lib=$(mktemp -d)/slowsync.so
cc -shared -fPIC -O1 -DCUZK_SLOW_SYNC_MS=400 -o $lib $here/../../../tests/shims/slowsync.c -ldl
args="bench load --submissions 300 --concurrency 50,300 --queued 1000 --params-dir /var/tmp/cuzk-test-params"
$cuzk $args > $here/load.json 2> $here/load.err
LD_PRELOAD=$lib $cuzk $args > $here/slow-disk.json 2> $here/slow-disk.err
python3 - $here/load.json $here/slow-disk.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    print(f.rsplit("/", 1)[1])
    def show(name, r):
        ms = lambda k: f"p50 {r[k].get('p50', 0):7.1f} p99 {r[k].get('p99', 0):7.1f} max {r[k].get('max', 0):7.1f} ({r[k]['count']})"
        print(f"  {name:22} {str(r['statuses']):26} {r['elapsed_s']:6.2f} s | submit {ms('submit_ms')} | healthz {ms('healthz_ms')} | job status {ms('job_status_ms')}"
              f" | Retry-After on {r['refused_with_retry_after']} of {r['refused_with_retry_after'] + r['refused_without_retry_after']} refused ({r['retry_after_s']['min']}-{r['retry_after_s']['max']} s)"
              f" | peak RSS {r['service']['peak_rss_bytes'] / 1e9:.2f} GB (pinned pool {r['service']['pinned_pool_bytes'] / 1e9:.2f} GB)")
    for p in json.load(open(f))["phases"]:
        if p["phase"] == "concurrency":
            show(f"{p['clients']} clients", p["result"])
        else:
            show(f"fill to {p['max_queued_jobs']} queued", p["fill"])
            show(f"past the cap ({p['queued_after_fill']} queued)", p["past_the_cap"]["result"])
PY
