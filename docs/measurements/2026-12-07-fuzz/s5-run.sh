#!/bin/bash
# s5-run.sh TARGET SECS: one niced libFuzzer run on one core; its executions appended to executions.log
t=$1; secs=$2; F=/var/tmp/cuzk-fuzz; B=$F/target/x86_64-unknown-linux-gnu/release
mkdir -p $F/artifacts/$t
RUST_BACKTRACE=0 nice -n 19 $B/$t $F/corpus/$t -max_total_time=$secs -timeout=20 -rss_limit_mb=4096 -max_len=262144 \
  -print_final_stats=1 -artifact_prefix=$F/artifacts/$t/ > $F/s5-$t.log 2>&1
rc=$?
n=$(awk '/stat::number_of_executed_units/{print $2}' $F/s5-$t.log)
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $t ${n:-0} $([ $rc = 0 ] && echo ok || echo rc$rc) (session 5, ${secs} s niced, RUST_BACKTRACE=0; rc72: stopped by SIGINT)" >> $F/executions.log
