#!/usr/bin/env bash
# Durable background submits: gearwheel's journal (group commit) against gearmand's sqlite
# queue, with the load generator (benches/load/, --mode fill --no-drain: SUBMIT_JOB_BG into
# an empty queue, no workers). Every run gets a fresh server and a fresh temporary data
# directory, removed afterwards.
#
#   benches/compare_durable.sh           # about 2 minutes
#   QUICK=1 benches/compare_durable.sh   # under a minute
#
# Servers (CONFIGS):
#   gw-always   gearwheel serve --data-dir DIR --fsync always   (the default: reply after fsync)
#   gw-100      gearwheel serve --data-dir DIR --fsync 100      (fsync at most every 100 ms)
#   gw-never    gearwheel serve --data-dir DIR --fsync never    (the OS writes back)
#   sqlite      gearmand -t 1 -q libsqlite3 --libsqlite3-db DIR/q.db
# Loads (MODES):
#   pipelined   4 clients, window 64: each client keeps 64 submits unanswered (group commit)
#   window1     4 clients, window 1: one submit in flight per client (the worst case for fsync)
#   fanin       64 clients, window 1: many producers waiting on one reply each
#
# Environment: REPS (3; QUICK 1), CONFIGS, MODES, GW_JOBS_PIPELINED, GW_JOBS_WINDOW1,
# GW_JOBS_FANIN, SQLITE_JOBS (every sqlite run; it fsyncs per job, so keep it under a minute),
# RAW=FILE (keep the RESULT lines), TABLE_ONLY=1 (print the table of an earlier RAW),
# GEARMAND=PATH. Only loopback addresses are used.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  REPS=${REPS:-1}
  GW_JOBS_PIPELINED=${GW_JOBS_PIPELINED:-30000}
  GW_JOBS_WINDOW1=${GW_JOBS_WINDOW1:-5000}
  GW_JOBS_FANIN=${GW_JOBS_FANIN:-10000}
  SQLITE_JOBS=${SQLITE_JOBS:-3000}
else
  REPS=${REPS:-3}
  GW_JOBS_PIPELINED=${GW_JOBS_PIPELINED:-100000}
  GW_JOBS_WINDOW1=${GW_JOBS_WINDOW1:-20000}
  GW_JOBS_FANIN=${GW_JOBS_FANIN:-50000}
  SQLITE_JOBS=${SQLITE_JOBS:-10000}
fi
CONFIGS=${CONFIGS:-"gw-always gw-100 gw-never sqlite"}
MODES=${MODES:-"pipelined window1 fanin"}
GEARMAND=${GEARMAND:-gearmand}
TABLE_ONLY=${TABLE_ONLY:-0}
RAW=${RAW:-$(mktemp /tmp/gearwheel-durable.XXXXXX)}
[ "$TABLE_ONLY" = 1 ] || : > "$RAW"

# servers.sh builds, starts (through this script's launch), runs the load and takes
# medians; cleanup is this script's own (data directories). Without gearmand there is no
# sqlite configuration.
. benches/servers.sh
GEARMAND_CONFIGS='^sqlite$'
DATA=""
cleanup() {
  stop_server
  if [ -n "$DATA" ]; then
    rm -rf "$DATA"
    DATA=""
  fi
}
prepare
HAVE_CURL=0
command -v curl >/dev/null && HAVE_CURL=1

# Every start (servers.sh's start_server) gets a fresh data directory and an HTTP port.
launch() { # config port; sets SERVER_PID, DATA, HPORT
  DATA=$(mktemp -d /tmp/gearwheel-durable-data.XXXXXX)
  HPORT=$(free_port)
  case "$1" in
    gw-always | gw-100 | gw-never)
      "$GW" serve -L 127.0.0.1 -p "$2" -l none --data-dir "$DATA" --fsync "${1#gw-}" \
        --http-port "$HPORT" 2>/dev/null &
      ;;
    sqlite)
      "$GEARMAND" -t 1 -L 127.0.0.1 -p "$2" -l none -q libsqlite3 --libsqlite3-db "$DATA/q.db" \
        2>/dev/null &
      ;;
    *) echo "unknown config $1" >&2; exit 1 ;;
  esac
  SERVER_PID=$!
}

# gearwheel's journal numbers from /metrics: "commits fsyncs fsync_seconds_sum".
journal_counts() {
  if [ "$HAVE_CURL" != 1 ]; then
    echo "- - -"
    return
  fi
  curl -s "http://127.0.0.1:$HPORT/metrics" | awk '
    $1 == "gearwheel_journal_commits_total" { c = $2 }
    $1 == "gearwheel_journal_fsync_seconds_count" { n = $2 }
    $1 == "gearwheel_journal_fsync_seconds_sum" { s = $2 }
    END { print (c == "" ? "-" : c), (n == "" ? "-" : n), (s == "" ? "-" : s) }'
}

mode_args() { # mode config
  local jobs
  case "$1" in
    pipelined) jobs=$GW_JOBS_PIPELINED ;;
    window1) jobs=$GW_JOBS_WINDOW1 ;;
    fanin) jobs=$GW_JOBS_FANIN ;;
  esac
  [ "$2" = sqlite ] && jobs=$SQLITE_JOBS
  case "$1" in
    pipelined) echo "--clients 4 --window 64 --jobs $jobs" ;;
    window1) echo "--clients 4 --window 1 --jobs $jobs" ;;
    fanin) echo "--clients 64 --window 1 --jobs $jobs" ;;
  esac
}

t_start=$(date +%s)
[ "$TABLE_ONLY" = 1 ] && MODES_RUN="" || MODES_RUN=$MODES
for mode in $MODES_RUN; do
  for rep in $(seq "$REPS"); do
    for cfg in $CONFIGS; do
      # Write back what earlier runs (and the build) left dirty, so that no run pays for it.
      sync
      start_server "$cfg"
      echo "[$(($(date +%s) - t_start))s] $mode #$rep $cfg (port $PORT, $DATA)" >&2
      before="- - -"
      [ "$cfg" != sqlite ] && before=$(journal_counts)
      # shellcheck disable=SC2046
      if line=$(bench "$mode" "$cfg" 120 --mode fill --no-drain $(mode_args "$mode" "$cfg")); then
        disk=$(du -sb "$DATA" | awk '{print $1}')
        extra="disk_bytes=$disk"
        if [ "$cfg" != sqlite ]; then
          read -r c0 n0 s0 <<< "$before"
          read -r c1 n1 s1 <<< "$(journal_counts)"
          if [ "$c1" != - ]; then
            extra+=" commits=$((c1 - c0)) fsyncs=$((n1 - n0))"
            extra+=" fsync_sum_s=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.6f", b - a }')"
          fi
        fi
        echo "$line $extra" >> "$RAW"
      fi
      cleanup
    done
  done
done

# ---- the table -------------------------------------------------------------------------

# Derived per-run numbers, then their median.
derived() { # mode config what
  results "$1" "$2" | while read -r l; do
    get() { echo "$l" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    case "$3" in
      disk_per_job) awk -v d="$(get disk_bytes)" -v j="$(get jobs)" 'BEGIN { if (d != "" && j > 0) printf "%.0f\n", d / j }' ;;
      jobs_per_fsync) awk -v f="$(get fsyncs)" -v j="$(get jobs)" 'BEGIN { if (f != "" && f > 0) printf "%.1f\n", j / f }' ;;
      jobs_per_commit) awk -v c="$(get commits)" -v j="$(get jobs)" 'BEGIN { if (c != "" && c > 0) printf "%.1f\n", j / c }' ;;
      fsync_mean_us) awk -v f="$(get fsyncs)" -v s="$(get fsync_sum_s)" 'BEGIN { if (f != "" && f > 0) printf "%.0f\n", s * 1e6 / f }' ;;
    esac
  done | median_of
}

cell() { # mode config key
  case "$3" in
    disk_per_job | jobs_per_fsync | jobs_per_commit | fsync_mean_us) derived "$@" ;;
    *) median "$@" ;;
  esac
}

# Unlike servers.sh's: one decimal, and "-" for a missing value.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.1f", a / b }'
}

GWS=$(echo "$CONFIGS" | tr ' ' '\n' | grep '^gw-' | tr '\n' ' ' || true)
has_sqlite=0
case " $CONFIGS " in *" sqlite "*) has_sqlite=1 ;; esac

row() { # title mode key ratios(0/1)
  local line="| $1 |" v sq="" cfg
  for cfg in $CONFIGS; do
    v=$(cell "$2" "$cfg" "$3")
    line+=" ${v:--} |"
    [ "$cfg" = sqlite ] && sq=$v
  done
  if [ "$has_sqlite" = 1 ]; then
    for cfg in $GWS; do
      if [ "$4" = 1 ]; then
        line+=" $(ratio "$(cell "$2" "$cfg" "$3")" "$sq") |"
      else
        line+=" |"
      fi
    done
  fi
  echo "$line"
}

label() {
  case "$1" in
    gw-always) echo "gearwheel --fsync always" ;;
    gw-100) echo "gearwheel --fsync 100" ;;
    gw-never) echo "gearwheel --fsync never" ;;
    sqlite) echo "gearmand -q libsqlite3" ;;
  esac
}
header="| metric |"
sep="|---|"
for cfg in $CONFIGS; do header+=" $(label "$cfg") |"; sep+="---:|"; done
if [ "$has_sqlite" = 1 ]; then
  for cfg in $GWS; do header+=" ${cfg#gw-} / sqlite |"; sep+="---:|"; done
fi

echo
echo "gearwheel $("$GW" --version 2>/dev/null | awk '{print $2}') vs $("$GEARMAND" --version 2>/dev/null | grep -m1 gearmand | awk '{print $1, $2}') -t 1," \
  "$(nproc) cores, $(date -u +%Y-%m-%d), QUICK=$QUICK REPS=$REPS (median);" \
  "jobs per run: gearwheel $GW_JOBS_PIPELINED / $GW_JOBS_WINDOW1 / $GW_JOBS_FANIN, sqlite $SQLITE_JOBS"
echo "$header"
echo "$sep"
for mode in pipelined window1 fanin; do
  has "$mode" || continue
  case "$mode" in
    pipelined) t="4 clients, window 64" ;;
    window1) t="4 clients, window 1" ;;
    fanin) t="64 clients, window 1" ;;
  esac
  row "$mode ($t): submits/s" "$mode" submits_per_s 1
  row "$mode: server CPU µs per submit" "$mode" fill_cpu_us_per_job 0
  row "$mode: jobs per fsync (gearwheel: from /metrics)" "$mode" jobs_per_fsync 0
  row "$mode: mean fsync µs" "$mode" fsync_mean_us 0
  row "$mode: bytes on disk per job (64 B payload)" "$mode" disk_per_job 0
done
echo
echo "raw results: $RAW ($(($(date +%s) - t_start))s)"
