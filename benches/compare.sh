#!/usr/bin/env bash
# gearwheel side by side with gearmand on this machine, with one load generator
# (benches/load/). Builds gearwheel in release, then for every mode and repetition starts
# a fresh server of each configuration on a free loopback port, runs the load, stops it, and
# prints the medians with ratios gearwheel / gearmand.
#
#   benches/compare.sh              # about 7 minutes
#   QUICK=1 benches/compare.sh      # under a minute, smaller runs
#
# Environment:
#   REPS=N          repetitions of each repeated mode (3; QUICK 1); the median is reported
#   SYNC_REPS=N     repetitions of the short, noisy sync and echo modes (9; QUICK 1)
#   CONFIGS="..."   servers to run: gearwheel gearwheel-musl gearmand-t1 gearmand-t0 (all;
#                   gearwheel-musl, the static musl build, only if its Rust target is installed:
#                   rustup target add x86_64-unknown-linux-musl); gearwheel-before runs the
#                   binary GW_BEFORE names (an earlier build: before/after in one run, with
#                   its own ratio columns against the same gearmand runs); gearwheel-w0 is
#                   gearwheel with --worker-wakeup 0 (every sleeper woken per job, as gearmand);
#                   gearwheel-nokeep is gearwheel with --keep-output-total 0 (no job's output
#                   or result kept: what keeping them costs)
#   MODES="..."     bg sync echo fill idle idle10k future future-spread future-idle, and
#                   bg-many sync-many: bg and sync with MANY_WORKERS workers (64), most of
#                   them asleep: what each new job's wake-ups cost
#   RAW=FILE        keep every RESULT line here (default: a temporary file)
#   TABLE_ONLY=1    run nothing; print the table from an earlier RAW file
#   GEARMAND=PATH   the gearmand binary (default: gearmand on PATH)
#   *_JOBS, FUTURE_SPREAD, FUTURE_IDLE_SECS: run sizes, see below
# Only loopback addresses are used. Both servers are stopped on exit, also on ^C.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  REPS=${REPS:-1}
  SYNC_REPS=${SYNC_REPS:-$REPS}
  BG_JOBS=${BG_JOBS:-30000}
  SYNC_JOBS=${SYNC_JOBS:-5000}
  ECHO_JOBS=${ECHO_JOBS:-20000}
  FILL_JOBS=${FILL_JOBS:-30000}
  IDLE_CONNS=${IDLE_CONNS:-500}
  IDLE_SECS=${IDLE_SECS:-1}
  FUTURE_JOBS=${FUTURE_JOBS:-10000}
  FUTURE_SPREAD=${FUTURE_SPREAD:-2}
  FUTURE_IDLE_JOBS=${FUTURE_IDLE_JOBS:-50000}
  FUTURE_IDLE_SECS=${FUTURE_IDLE_SECS:-2}
  MANY_WORKERS=${MANY_WORKERS:-64}
  MODES=${MODES:-"bg sync echo fill idle future"}
else
  REPS=${REPS:-3}
  SYNC_REPS=${SYNC_REPS:-9}
  BG_JOBS=${BG_JOBS:-100000}
  SYNC_JOBS=${SYNC_JOBS:-30000}
  ECHO_JOBS=${ECHO_JOBS:-100000}
  FILL_JOBS=${FILL_JOBS:-100000}
  IDLE_CONNS=${IDLE_CONNS:-1000}
  IDLE_SECS=${IDLE_SECS:-1}
  FUTURE_JOBS=${FUTURE_JOBS:-100000}
  FUTURE_SPREAD=${FUTURE_SPREAD:-10}
  FUTURE_IDLE_JOBS=${FUTURE_IDLE_JOBS:-1000000}
  FUTURE_IDLE_SECS=${FUTURE_IDLE_SECS:-10}
  MANY_WORKERS=${MANY_WORKERS:-64}
  MODES=${MODES:-"bg sync echo fill idle idle10k future future-spread future-idle"}
fi
. benches/servers.sh
if [ -z "${CONFIGS:-}" ]; then
  CONFIGS="gearwheel gearmand-t1 gearmand-t0"
  musl_installed && CONFIGS="gearwheel gearwheel-musl gearmand-t1 gearmand-t0"
fi
GEARMAND=${GEARMAND:-gearmand}
TABLE_ONLY=${TABLE_ONLY:-0}
RAW=${RAW:-$(mktemp /tmp/gearwheel-compare.XXXXXX)}
[ "$TABLE_ONLY" = 1 ] || : > "$RAW"
prepare

mode_args() {
  case "$1" in
    bg) echo "--mode bg --jobs $BG_JOBS" ;;
    sync) echo "--mode sync --jobs $SYNC_JOBS" ;;
    bg-many) echo "--mode bg --jobs $BG_JOBS --workers $MANY_WORKERS" ;;
    sync-many) echo "--mode sync --jobs $SYNC_JOBS --workers $MANY_WORKERS" ;;
    echo) echo "--mode echo --jobs $ECHO_JOBS" ;;
    fill) echo "--mode fill --jobs $FILL_JOBS" ;;
    idle) echo "--mode idle --connections $IDLE_CONNS --idle-secs $IDLE_SECS" ;;
    idle10k) echo "--mode idle --connections 10000 --idle-secs $IDLE_SECS" ;;
    future) echo "--mode future --jobs $FUTURE_JOBS --spread 0" ;;
    future-spread) echo "--mode future --jobs $FUTURE_JOBS --spread $FUTURE_SPREAD" ;;
    future-idle) echo "--mode future-idle --jobs $FUTURE_IDLE_JOBS --idle-secs $FUTURE_IDLE_SECS" ;;
  esac
}

# Modes that run once per configuration: long, or not noisy.
reps_for() {
  case "$1" in
    idle | idle10k | future | future-spread | future-idle) echo 1 ;;
    # About a second each, and the most variable from run to run on a small VM.
    sync | sync-many | echo) echo "$SYNC_REPS" ;;
    *) echo "$REPS" ;;
  esac
}

# The long modes skip gearmand -t 0 (it behaves as -t 1 there) and the musl build (the same
# code as gearwheel's): time is short.
configs_for() {
  case "$1" in
    idle10k | future-spread | future-idle) echo "$CONFIGS" | tr ' ' '\n' | grep -v '^gearmand-t0$\|^gearwheel-musl$' | tr '\n' ' ' ;;
    *) echo "$CONFIGS" ;;
  esac
}

t_start=$(date +%s)
[ "$TABLE_ONLY" = 1 ] && MODES_RUN="" || MODES_RUN=$MODES
if [ "$TABLE_ONLY" != 1 ]; then
  # The machine's own floor under every latency below: how often a thread that only reads
  # the clock is stopped (timer ticks, the hypervisor). No server runs meanwhile.
  echo "[0s] stalls: a thread spinning alone for 2 s" >&2
  "$LOAD" --bench --mode stalls --idle-secs 2 --label machine | grep '^RESULT' >> "$RAW" || true
fi
for mode in $MODES_RUN; do
  for rep in $(seq "$(reps_for "$mode")"); do
    for cfg in $(configs_for "$mode"); do
      start_server "$cfg"
      echo "[$(( $(date +%s) - t_start ))s] $mode #$rep $cfg (port $PORT)" >&2
      # shellcheck disable=SC2046
      bench "$mode" "$cfg" 120 $(mode_args "$mode") >> "$RAW" || true
      cleanup
    done
  done
done

# ---- the table -------------------------------------------------------------------------

row() { # title mode key
  local vals=() cfg v
  for cfg in $CONFIGS; do
    v=$(median "$2" "$cfg" "$3")
    vals+=("${v:--}")
  done
  local line="| $1 |"
  for v in "${vals[@]}"; do line+=" $v |"; done
  local i=0 gw="" before=""
  for cfg in $CONFIGS; do
    [ "$cfg" = gearwheel ] && gw=${vals[$i]}
    [ "$cfg" = gearwheel-before ] && before=${vals[$i]}
    i=$((i + 1))
  done
  i=0
  for cfg in $CONFIGS; do
    case "$cfg" in gearmand-*) line+=" $(ratio "$gw" "${vals[$i]}") |" ;; esac
    i=$((i + 1))
  done
  # A before/after run: the earlier build's ratios too, against the same gearmand runs.
  if has_config gearwheel-before; then
    i=0
    for cfg in $CONFIGS; do
      case "$cfg" in gearmand-*) line+=" $(ratio "$before" "${vals[$i]}") |" ;; esac
      i=$((i + 1))
    done
  fi
  echo "$line"
}
has_config() { case " $CONFIGS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

header="| metric |"
sep="|---|"
for cfg in $CONFIGS; do header+=" $cfg |"; sep+="---:|"; done
for cfg in $CONFIGS; do
  case "$cfg" in gearmand-*) header+=" gw / ${cfg#gearmand-} |"; sep+="---:|" ;; esac
done
if has_config gearwheel-before; then
  for cfg in $CONFIGS; do
    case "$cfg" in gearmand-*) header+=" before / ${cfg#gearmand-} |"; sep+="---:|" ;; esac
  done
fi

echo
echo "gearwheel $("$GW" --version 2>/dev/null | awk '{print $2}') vs $("$GEARMAND" --version 2>/dev/null | grep -m1 gearmand | awk '{print $1, $2}')," \
  "$(nproc) cores, $(date -u +%Y-%m-%d), QUICK=$QUICK REPS=$REPS SYNC_REPS=$SYNC_REPS (median)"
echo "$header"
echo "$sep"
if has bg; then
  row "bg: jobs/s end to end ($BG_JOBS jobs, 4 clients, 4 workers, window 64)" bg jobs_per_s
  row "bg: submits/s while workers run" bg submits_per_s
  row "bg: server CPU µs per job" bg server_cpu_us_per_job
  row "bg: server wake-ups per job" bg server_wakeups_per_job
fi
if has sync; then
  row "sync: jobs/s (4 clients, 1 job in flight each)" sync jobs_per_s
  row "sync: p50 µs" sync p50_us
  row "sync: p99 µs" sync p99_us
  row "sync: server CPU µs per job" sync server_cpu_us_per_job
fi
if has bg-many; then
  row "bg-many: jobs/s end to end ($BG_JOBS jobs, 4 clients, $MANY_WORKERS workers)" bg-many jobs_per_s
  row "bg-many: server CPU µs per job" bg-many server_cpu_us_per_job
  row "bg-many: server wake-ups per job" bg-many server_wakeups_per_job
fi
if has sync-many; then
  row "sync-many: jobs/s (4 clients, $MANY_WORKERS workers)" sync-many jobs_per_s
  row "sync-many: p50 µs" sync-many p50_us
  row "sync-many: p99 µs" sync-many p99_us
  row "sync-many: server CPU µs per job" sync-many server_cpu_us_per_job
fi
if has echo; then
  row "echo: round trips/s (4 clients)" echo echoes_per_s
  row "echo: p99 µs" echo p99_us
  row "echo: server CPU µs per echo" echo server_cpu_us_per_job
fi
if has fill; then
  row "fill: submits/s into an empty queue ($FILL_JOBS jobs)" fill submits_per_s
  row "fill: private bytes (RssAnon) per queued job (64 B payload)" fill bytes_per_queued_job
  row "fill: server CPU µs per submit" fill fill_cpu_us_per_job
  row "drain: jobs/s (4 workers)" fill drain_jobs_per_s
  row "drain: % of the queue's private memory given back" fill rss_returned_pct
fi
if has idle; then
  row "idle: RSS kB after start" idle server_rss_kb_idle
  row "idle: private kB (RssAnon) after start" idle server_anon_kb_idle
  row "idle: private bytes per idle connection ($IDLE_CONNS)" idle bytes_per_connection
  row "idle: context switches in ${IDLE_SECS}s with $IDLE_CONNS connections" idle idle_wakeups
  row "idle: threads" idle server_threads
fi
if has idle10k; then
  row "10,000 connections: private bytes per connection" idle10k bytes_per_connection
fi
if has future; then
  row "future: $FUTURE_JOBS due in one second, lateness p50 ms" future lateness_p50_ms
  row "future: ... p99 ms" future lateness_p99_ms
  row "future: ... max ms" future lateness_max_ms
  row "future: ... first job (min) ms" future lateness_min_ms
fi
if has future-spread; then
  row "future: $FUTURE_JOBS spread over ${FUTURE_SPREAD}s, lateness p50 ms" future-spread lateness_p50_ms
  row "future: ... p99 ms" future-spread lateness_p99_ms
  row "future: ... max ms" future-spread lateness_max_ms
fi
if has future-idle; then
  row "future-idle: submits/s of $FUTURE_IDLE_JOBS EPOCH jobs" future-idle submits_per_s
  row "future-idle: private bytes per future job" future-idle bytes_per_future_job
  row "future-idle: server CPU ms in ${FUTURE_IDLE_SECS}s idle" future-idle idle_cpu_ms
  row "future-idle: context switches in ${FUTURE_IDLE_SECS}s idle" future-idle idle_wakeups
fi
echo
stalls=$(grep '^RESULT mode=stalls ' "$RAW" | tail -1 || true)
if [ -n "$stalls" ]; then
  st() { echo "$stalls" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  echo "this machine: a thread spinning alone is stopped $(st stalls_20us_per_s) times a second for 20 µs or more," \
    "$(st stalls_50us_per_s) for 50 µs or more, $(st stalls_100us_per_s) for 100 µs or more ($(st stalled_pct)% of its time)"
fi
case " $CONFIGS " in
  *" gearwheel-musl "*) echo "gearwheel-musl binary: $(stat -c %s "$GW_MUSL") bytes (static, stripped release)" ;;
esac
echo "gearwheel binary: $(stat -c %s "$GW") bytes (stripped release); gearmand: $(stat -c %s "$(command -v "$GEARMAND" 2>/dev/null || echo /dev/null)") bytes plus shared libraries"
echo "raw results: $RAW ($(( $(date +%s) - t_start ))s)"
