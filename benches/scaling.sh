#!/usr/bin/env bash
# How gearwheel and gearmand scale, side by side under one load generator (benches/load/),
# a fresh server per run:
#  - with connections: 1 to 10,000 synchronous clients, one job in flight each, 4 workers:
#    jobs/s, p99 latency, and the server's RSS at the end of the run;
#  - with queue depth: 1,000 to 1,000,000 queued jobs (4 clients fill, then 4 workers drain):
#    submits/s, private memory per queued job, drain jobs/s, and the share of it given back.
#
#   benches/scaling.sh            # about 5 minutes
#
# Environment:
#   CONFIGS="..."   gearwheel gearmand-t1 (default); also gearmand-t0, gearwheel-musl
#   CLIENTS="..."   1 10 100 1000 10000
#   DEPTHS="..."    1000 10000 100000 1000000
#   SYNC_JOBS=N     jobs per connection run, at least 5 per client (20000)
#   RAW=FILE, TABLE_ONLY=1, GEARMAND=PATH   as in compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."

. benches/servers.sh
CONFIGS=${CONFIGS:-"gearwheel gearmand-t1"}
CLIENTS=${CLIENTS:-"1 10 100 1000 10000"}
DEPTHS=${DEPTHS:-"1000 10000 100000 1000000"}
SYNC_JOBS=${SYNC_JOBS:-20000}
GEARMAND=${GEARMAND:-gearmand}
TABLE_ONLY=${TABLE_ONLY:-0}
RAW=${RAW:-$(mktemp /tmp/gearwheel-scaling.XXXXXX)}
[ "$TABLE_ONLY" = 1 ] || : > "$RAW"
prepare

t_start=$(date +%s)
run() { # name config load-args...
  local name=$1 cfg=$2
  shift 2
  start_server "$cfg"
  echo "[$(($(date +%s) - t_start))s] $name $cfg (port $PORT)" >&2
  bench "$name" "$cfg" 300 "$@" >> "$RAW" || true
  cleanup
}

if [ "$TABLE_ONLY" != 1 ]; then
  for c in $CLIENTS; do
    jobs=$((SYNC_JOBS > 5 * c ? SYNC_JOBS : 5 * c))
    for cfg in $CONFIGS; do
      run "conns-$c" "$cfg" --mode sync --clients "$c" --workers 4 --jobs "$jobs"
    done
  done
  for d in $DEPTHS; do
    for cfg in $CONFIGS; do
      run "depth-$d" "$cfg" --mode fill --clients 4 --workers 4 --jobs "$d"
    done
  done
fi

# One table row: the first cell, then each configuration's value of `key` (scaled by `div`),
# then gearwheel's ratio to each gearmand configuration.
cells() { # mode key [div]
  local div=${3:-1} cfg v gw="" out=""
  local vals=()
  for cfg in $CONFIGS; do
    v=$(median "$1" "$cfg" "$2")
    [ -n "$v" ] && v=$(awk -v v="$v" -v d="$div" 'BEGIN { x = v / d; printf (x >= 100 || x == int(x)) ? "%.0f" : "%.2f", x }')
    vals+=("${v:--}")
    out+=" ${v:--} |"
    [ "$cfg" = gearwheel ] && gw=$v
  done
  local i=0
  for cfg in $CONFIGS; do
    case "$cfg" in gearmand-*) out+=" $(ratio "$gw" "${vals[$i]}") |" ;; esac
    i=$((i + 1))
  done
  echo -n "$out"
}

header() { # what
  local h="| $1 |" s="|---:|" cfg
  for cfg in $CONFIGS; do h+=" $cfg |"; s+="---:|"; done
  for cfg in $CONFIGS; do
    case "$cfg" in gearmand-*) h+=" gw / ${cfg#gearmand-} |"; s+="---:|" ;; esac
  done
  echo "$h"
  echo "$s"
}

table() { # title what prefix values key [div]
  echo
  echo "$1"
  echo
  header "$2"
  local x
  for x in $4; do
    echo "| $x |$(cells "$3$x" "$5" "${6:-1}")"
  done
}

echo
echo "gearwheel $("$GW" --version 2>/dev/null | awk '{print $2}') vs $("$GEARMAND" --version 2>/dev/null | grep -m1 gearmand | awk '{print $1, $2}'), $(nproc) cores, $(date -u +%Y-%m-%d)"
table "Synchronous jobs/s by connected clients (one job in flight each, 4 workers)" clients conns- "$CLIENTS" jobs_per_s
table "p99 latency, ms" clients conns- "$CLIENTS" p99_us 1000
table "Server RSS at the end of the run, kB" clients conns- "$CLIENTS" server_rss_kb_after
table "Submits/s into an empty queue, by jobs queued in the end" "queued jobs" depth- "$DEPTHS" submits_per_s
table "private memory (RssAnon) per queued job, bytes (64-byte payload)" "queued jobs" depth- "$DEPTHS" bytes_per_queued_job
table "Drain, jobs/s (4 workers)" "queued jobs" depth- "$DEPTHS" drain_jobs_per_s
table "Share of the queue's private memory given back after the drain, %" "queued jobs" depth- "$DEPTHS" rss_returned_pct
echo
echo "raw results: $RAW ($(($(date +%s) - t_start))s)"
