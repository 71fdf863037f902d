#!/usr/bin/env bash
# Server instructions per job, counted under valgrind's callgrind (user space only), for a
# before/after of a change that the machine's noise would hide from compare.sh: each mode is
# run twice against a fresh server, with SMALL and LARGE jobs, and the difference of the two
# totals over LARGE - SMALL is the cost of one job, start-up and shut-down cancelled out.
#
#   benches/instructions.sh                                   # gearwheel: sync bg fill
#   GW_BEFORE=../before/target/release/gearwheel benches/instructions.sh
#
# Environment:
#   MODES="..."   load modes (sync bg fill; fill runs with --no-drain, so it is the submit alone)
#   GW_BEFORE=BIN an earlier build, run first in each mode
#   SMALL, LARGE  jobs in the two runs (1000, 11000)
#   GW_ARGS="..." more serve flags for this build only (not GW_BEFORE's), e.g.
#                 GW_ARGS="--keep-output-total 0" to leave out what keeping outputs costs
# Needs valgrind (apt-get install valgrind). The counts move by 1-3% from run to run (how many
# packets one read brings depends on timing), so compare builds in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
MODES=${MODES:-"sync bg fill"}
SMALL=${SMALL:-1000}
LARGE=${LARGE:-11000}
CONFIGS="gearwheel"
GEARMAND=${GEARMAND:-gearmand}
TABLE_ONLY=0
. benches/servers.sh
command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed" >&2; exit 0; }
prepare

# Total instructions of one server run under callgrind: BIN MODE JOBS.
count() {
  local out port
  out=$(mktemp)
  port=$(free_port)
  local args=""
  [ "$1" = "$GW" ] && args=${GW_ARGS:-}
  # shellcheck disable=SC2086 # GW_ARGS is a list of flags
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" serve -L 127.0.0.1 -p "$port" \
    -l none --idle-trim 0 $args 2>/dev/null &
  SERVER_PID=$!
  wait_port "$port" "$SERVER_PID" || { echo "$1 did not start under valgrind" >&2; exit 1; }
  local extra=""
  [ "$2" = fill ] && extra=--no-drain
  "$LOAD" --mode "$2" --jobs "$3" --port "$port" $extra >/dev/null
  stop_server
  sed -n 's/^summary: //p' "$out"
  rm -f "$out"
}

bins="$GW"
[ -n "${GW_BEFORE:-}" ] && bins="$GW_BEFORE $GW"
echo "| mode | binary | instructions per job |"
echo "|---|---|---:|"
for mode in $MODES; do
  for bin in $bins; do
    small=$(count "$bin" "$mode" "$SMALL")
    large=$(count "$bin" "$mode" "$LARGE")
    echo "| $mode | $bin | $(((large - small) / (LARGE - SMALL))) |"
  done
done
