# Shared by compare.sh, compare_durable.sh, scaling.sh and tls.sh (sourced, not run): build
# gearwheel and the load generator, start and stop one server of a configuration on a free
# loopback port, run the load generator against it into RAW, and take medians and ratios of
# the generator's RESULT lines.
#
# Configurations: gearwheel, gearwheel-musl (the static musl build), gearmand-t1, gearmand-t0,
# gearwheel-w0 (gearwheel with --worker-wakeup 0: every sleeping worker woken per job, as
# gearmand does), and gearwheel-before: the binary GW_BEFORE names (an earlier build, for
# before/after tables of a change in the same run; built by nobody here). A script with configurations of its own
# redefines `launch` (calling `launch_server` for these; a failure means "not started") and,
# if it starts more than the server, `cleanup`.
# The caller sets CONFIGS, GEARMAND, TABLE_ONLY and RAW, then calls `prepare`; with
# GEARMAND_CONFIGS (a grep pattern, default gearmand) naming the configurations that need
# gearmand.

MUSL_TARGET=x86_64-unknown-linux-musl
GW=target/release/gearwheel
GW_MUSL=target/$MUSL_TARGET/release/gearwheel

# Is the static musl build possible here? (rustup target add x86_64-unknown-linux-musl)
musl_installed() {
  rustup target list --installed 2>/dev/null | grep -qx "$MUSL_TARGET"
}

# Stop this process, if it is given and still runs.
stop_pid() { # pid
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}

SERVER_PID=""
# Stop the server of the current run, if any.
stop_server() {
  stop_pid "$SERVER_PID"
  SERVER_PID=""
}
cleanup() { stop_server; }

# Build what CONFIGS needs, find the load generator (LOAD), drop gearmand configurations if
# gearmand is missing, and stop the server on exit.
prepare() {
  trap cleanup EXIT
  trap 'cleanup; exit 130' INT TERM
  if [ "$TABLE_ONLY" != 1 ]; then
    echo "building gearwheel (release) and the load generator..." >&2
    cargo build --release --quiet --bin gearwheel
    case " $CONFIGS " in
      *" gearwheel-musl "*) cargo build --release --quiet --bin gearwheel --target "$MUSL_TARGET" ;;
    esac
    LOAD=$(cargo bench --bench load --no-run --message-format=json 2>/dev/null |
      sed -n 's/.*"executable":"\([^"]*\/load-[^"]*\)".*/\1/p' | tail -1)
    [ -x "$LOAD" ] || { echo "cannot find the load generator binary" >&2; exit 1; }
  fi
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  if ! command -v "$GEARMAND" >/dev/null; then
    echo "gearmand not found: running gearwheel only (apt-get install gearman-job-server)" >&2
    CONFIGS=$(echo "$CONFIGS" | tr ' ' '\n' | grep -v "${GEARMAND_CONFIGS:-gearmand}" | tr '\n' ' ')
  fi
}

# Ports below the kernel's ephemeral range, so that no client socket of an earlier run holds
# the port; a server that still cannot bind is retried on another port.
EPH_LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((10000 + RANDOM % (EPH_LOW - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "no free port" >&2
  exit 1
}

launch_server() { # config port; sets SERVER_PID
  case "$1" in
    gearwheel) "$GW" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearwheel-before) "${GW_BEFORE:?GW_BEFORE names the earlier binary}" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearwheel-nokeep) "$GW" serve -L 127.0.0.1 -p "$2" -l none --keep-output-total 0 2>/dev/null & ;;
    gearwheel-w0) "$GW" serve -L 127.0.0.1 -p "$2" -l none --worker-wakeup 0 2>/dev/null & ;;
    gearwheel-musl) "$GW_MUSL" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearmand-t1) "$GEARMAND" -t 1 -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearmand-t0) "$GEARMAND" -t 0 -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    *) echo "unknown config $1" >&2; exit 1 ;;
  esac
  SERVER_PID=$!
}
launch() { launch_server "$@"; }

# Wait until something accepts on the loopback PORT, while PID runs (5 s at most).
wait_port() { # port pid
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

start_server() { # config; sets SERVER_PID and PORT
  for _ in 1 2 3 4 5; do
    PORT=$(free_port)
    if launch "$1" "$PORT" && wait_port "$PORT" "$SERVER_PID"; then
      sleep 0.2 # let it settle before the idle RSS is read
      return
    fi
    cleanup
  done
  echo "$1 did not start" >&2
  exit 1
}

# One run of the load generator (LOAD-ARGS) against the current server (PORT, SERVER_PID),
# labelled CONFIG: its RESULT line, the mode named MODE (idle10k runs the load's idle mode);
# "(no result)" on stderr and a failure when it printed none.
bench() { # mode config timeout load-args...
  local mode=$1 cfg=$2 timeout=$3 line
  shift 3
  if line=$("$LOAD" --bench "$@" --port "$PORT" --pid "$SERVER_PID" --label "$cfg" \
    --timeout "$timeout" | grep '^RESULT'); then
    echo "${line/RESULT mode=* label=/RESULT mode=$mode label=}"
  else
    echo "  (no result)" >&2
    return 1
  fi
}

# The RESULT lines of one mode and configuration in RAW.
results() { # mode config
  grep "^RESULT mode=$1 label=$2 " "$RAW" || true
}

# One value a run.
values() { # mode config key
  results "$1" "$2" | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# The median of the numbers on stdin, one a line (nothing for none).
median_of() {
  sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}'
}

median() { # mode config key
  values "$@" | median_of
}

# Is this mode in MODES?
has() { case " $MODES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

ratio() { # a b
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

