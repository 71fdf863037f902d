# Shared by compare.sh and scaling.sh (sourced, not run): build gearwheel and the load
# generator, start and stop one server of a configuration on a free loopback port, and take
# medians and ratios of the generator's RESULT lines. compare_durable.sh takes free_port.
#
# Configurations: gearwheel, gearwheel-musl (the static musl build), gearmand-t1, gearmand-t0,
# and gearwheel-before: the binary GW_BEFORE names (an earlier build, for before/after tables
# of a change in the same run; built by nobody here).
# The caller sets CONFIGS, GEARMAND, TABLE_ONLY and RAW, then calls `prepare`.

MUSL_TARGET=x86_64-unknown-linux-musl
GW=target/release/gearwheel
GW_MUSL=target/$MUSL_TARGET/release/gearwheel

# Is the static musl build possible here? (rustup target add x86_64-unknown-linux-musl)
musl_installed() {
  rustup target list --installed 2>/dev/null | grep -qx "$MUSL_TARGET"
}

SERVER_PID=""
# Stop the server of the current run, if any.
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
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
    CONFIGS=$(echo "$CONFIGS" | tr ' ' '\n' | grep -v gearmand | tr '\n' ' ')
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

launch() { # config port
  case "$1" in
    gearwheel) "$GW" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearwheel-before) "${GW_BEFORE:?GW_BEFORE names the earlier binary}" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearwheel-musl) "$GW_MUSL" serve -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearmand-t1) "$GEARMAND" -t 1 -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    gearmand-t0) "$GEARMAND" -t 0 -L 127.0.0.1 -p "$2" -l none 2>/dev/null & ;;
    *) echo "unknown config $1" >&2; exit 1 ;;
  esac
  SERVER_PID=$!
}

start_server() { # config; sets SERVER_PID and PORT
  for _ in 1 2 3 4 5; do
    PORT=$(free_port)
    launch "$1" "$PORT"
    for _ in $(seq 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
        sleep 0.2 # let it settle before the idle RSS is read
        return
      fi
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.05
    done
    cleanup
  done
  echo "$1 did not start" >&2
  exit 1
}

median() { # mode config key
  { grep "^RESULT mode=$1 label=$2 " "$RAW" || true; } | tr ' ' '\n' | sed -n "s/^$3=//p" |
    sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}'
}

ratio() { # a b
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'
}

