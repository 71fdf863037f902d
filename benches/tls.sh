#!/usr/bin/env bash
# TLS side by side: gearwheel's own TLS, plaintext gearwheel, and gearmand behind
# stunnel4 (how TLS is added to a server that has none; Debian's gearmand is built without
# it), all with the same certificates under one load generator (benches/load/ with --tls-*:
# every connection a mutual-TLS rustls client, pipelining like the plaintext runs). Prints the
# medians and the ratios the issue sets as goals:
#   gearwheel TLS / gearmand behind stunnel TLS jobs/s   >= 2
#   gearwheel TLS / gearwheel plaintext jobs/s           >= 2/3 (TLS costs at most a third)
# and full and resumed handshakes per second (each: connect, handshake, one ECHO, close).
#
#   benches/tls.sh               # about 3 minutes
#   QUICK=1 benches/tls.sh       # under a minute
#
# Environment:
#   REPS=N            repetitions (3; QUICK 1); the median is reported
#   BG_JOBS=N         background jobs per bg run (100000; QUICK 20000)
#   HANDSHAKES=N      connections per handshake run, full and resumed each (2000; QUICK 500)
#   CONFIGS="..."     gearwheel-tls gearwheel gearwheel-stunnel gearmand-stunnel gearmand
#                     (default: all five; the stunnel ones need stunnel4, gearmand gearmand)
#   TLS_VERSION=1.2   pin the load generator's TLS version (default: both offered, 1.3 chosen)
#   RAW=FILE          keep every RESULT line here (default: a temporary file)
#   GEARMAND=PATH     the gearmand binary (default: gearmand on PATH)
# The certificates are made with openssl in a temporary directory (the recipe of
# docs/security.md, EC P-256). Only loopback addresses are used; every server and stunnel is
# stopped on exit, also on ^C. gearmand runs with -t 1 (one I/O thread), stunnel4 as Debian
# ships it (a thread per connection).
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
  REPS=${REPS:-1}
  BG_JOBS=${BG_JOBS:-20000}
  HANDSHAKES=${HANDSHAKES:-500}
else
  REPS=${REPS:-3}
  BG_JOBS=${BG_JOBS:-100000}
  HANDSHAKES=${HANDSHAKES:-2000}
fi
CONFIGS=${CONFIGS:-"gearwheel-tls gearwheel gearwheel-stunnel gearmand-stunnel gearmand"}
GEARMAND=${GEARMAND:-gearmand}
TABLE_ONLY=0
RAW=${RAW:-$(mktemp /tmp/gearwheel-tls.XXXXXX)}
: > "$RAW"
. benches/servers.sh
prepare
if ! command -v stunnel4 >/dev/null; then
  echo "stunnel4 not found: no stunnel configurations (apt-get install stunnel4)" >&2
  CONFIGS=$(echo "$CONFIGS" | tr ' ' '\n' | grep -v stunnel | tr '\n' ' ')
fi

# ---- certificates --------------------------------------------------------------------------

CERTS=$(mktemp -d /tmp/gearwheel-tls-certs.XXXXXX)
STUNNEL_PID=""
stop_stunnel() {
  stop_pid "$STUNNEL_PID"
  STUNNEL_PID=""
}
cleanup() { stop_stunnel; stop_server; }
trap 'cleanup; rm -rf "$CERTS"' EXIT
(
  cd "$CERTS"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=bench CA" -keyout ca.key -out ca.pem 2>/dev/null
  for name in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -subj "/CN=bench-$name" -keyout $name.key -out $name.csr 2>/dev/null
    openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -days 30 \
      -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n') -out $name.pem 2>/dev/null
  done
)
SERVER_TLS=(--ssl-certificate "$CERTS/server.pem" --ssl-key "$CERTS/server.key" --ssl-ca-file "$CERTS/ca.pem")
CLIENT_TLS=(--tls-ca "$CERTS/ca.pem" --tls-cert "$CERTS/client.pem" --tls-key "$CERTS/client.key")
[ -n "${TLS_VERSION:-}" ] && CLIENT_TLS+=(--tls-version "$TLS_VERSION")

# ---- servers ---------------------------------------------------------------------------------

# stunnel4 in front of the server on $BACKEND, on PORT, requiring a client certificate:
# the configuration a gearmand user writes (verify = 2: a certificate signed by the CA).
start_stunnel() { # port
  cat > "$CERTS/stunnel.conf" <<EOF
foreground = yes
pid =
[gearman]
accept = 127.0.0.1:$1
connect = 127.0.0.1:$BACKEND
cert = $CERTS/server.pem
key = $CERTS/server.key
CAfile = $CERTS/ca.pem
verify = 2
EOF
  stunnel4 "$CERTS/stunnel.conf" 2>/dev/null &
  STUNNEL_PID=$!
  wait_port "$1" "$STUNNEL_PID"
}

# servers.sh's start_server launches a configuration through this: sets SERVER_PID and, for
# the stunnel ones, BACKEND and STUNNEL_PID (stunnel on PORT, where the load goes); fails
# when the backend or stunnel did not start.
launch() { # config port
  case "$1" in
    gearwheel-tls)
      "$GW" serve -L 127.0.0.1 -p "$2" -l none --ssl "${SERVER_TLS[@]}" 2>/dev/null &
      SERVER_PID=$! ;;
    gearmand) launch_server gearmand-t1 "$2" ;;
    gearwheel-stunnel | gearmand-stunnel)
      BACKEND=$(free_port)
      launch "${1%-stunnel}" "$BACKEND"
      wait_port "$BACKEND" "$SERVER_PID" && start_stunnel "$2" ;;
    *) launch_server "$@" ;;
  esac
}

tls_flags() { # config: the load generator's TLS flags for it
  case "$1" in
    *tls | *stunnel) echo "${CLIENT_TLS[*]}" ;;
  esac
}

also_pid() { # the stunnel's CPU counts as the server's
  [ -n "$STUNNEL_PID" ] && echo "--also-pid $STUNNEL_PID"
  return 0
}

# ---- runs ------------------------------------------------------------------------------------

t_start=$(date +%s)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for rep in $(seq "$REPS"); do
  for mode in bg handshake; do
    for cfg in $CONFIGS; do
      case "$mode:$cfg" in handshake:gearwheel | handshake:gearmand) continue ;; esac
      start_server "$cfg"
      echo "[$(( $(date +%s) - t_start ))s] $mode #$rep $cfg (port $PORT)" >&2
      if [ "$mode" = bg ]; then args="--mode bg --jobs $BG_JOBS"; else args="--mode handshake --jobs $HANDSHAKES --clients 4"; fi
      # shellcheck disable=SC2046,SC2086
      bench "$mode" "$cfg" 120 $args $(also_pid) $(tls_flags "$cfg") >> "$RAW" || true
      cleanup
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ---- the table -------------------------------------------------------------------------------

val() { median "$1" "$2" "$3"; }
echo
echo "gearwheel $("$GW" --version 2>/dev/null | awk '{print $2}'), $("$GEARMAND" --version 2>/dev/null | grep -m1 gearmand | awk '{print $1, $2}')," \
  "$(stunnel4 -version 2>&1 | grep -m1 -o 'stunnel [0-9.]*' || true), $(nproc) cores, $(date -u +%Y-%m-%d)," \
  "QUICK=$QUICK REPS=$REPS (median), TLS ${TLS_VERSION:-1.3}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
header="| metric |"
sep="|---|"
for cfg in $CONFIGS; do header+=" $cfg |"; sep+="---:|"; done
echo "$header"
echo "$sep"
row() { # title mode key
  local line="| $1 |" cfg v
  for cfg in $CONFIGS; do
    v=$(val "$2" "$cfg" "$3")
    line+=" ${v:--} |"
  done
  echo "$line"
}
row "bg: jobs/s end to end ($BG_JOBS jobs, 4 clients, 4 workers, window 64)" bg jobs_per_s
row "bg: server CPU µs per job (with stunnel's)" bg server_cpu_us_per_job
row "handshakes/s, full (4 clients; connect, handshake, ECHO, close)" handshake full_per_s
row "handshakes/s, resumed" handshake resumed_per_s
row "server CPU µs per full handshake (with stunnel's)" handshake full_server_cpu_us_each
row "server CPU µs per resumed handshake" handshake resumed_server_cpu_us_each
row "resumed handshakes that did resume (of $HANDSHAKES)" handshake resumed_resumed
echo
tls=$(val bg gearwheel-tls jobs_per_s)
echo "goal: gearwheel TLS / gearmand behind stunnel jobs/s >= 2:     $(ratio "$tls" "$(val bg gearmand-stunnel jobs_per_s)")"
echo "goal: gearwheel TLS / gearwheel plaintext jobs/s >= 0.67:      $(ratio "$tls" "$(val bg gearwheel jobs_per_s)")"
echo "gearwheel TLS / gearwheel behind stunnel jobs/s:               $(ratio "$tls" "$(val bg gearwheel-stunnel jobs_per_s)")"
echo "gearwheel / gearmand-stunnel full handshakes/s:                $(ratio "$(val handshake gearwheel-tls full_per_s)" "$(val handshake gearmand-stunnel full_per_s)")"
echo "gearwheel / gearmand-stunnel resumed handshakes/s:             $(ratio "$(val handshake gearwheel-tls resumed_per_s)" "$(val handshake gearmand-stunnel resumed_per_s)")"
echo "(RESULT lines in $RAW)"
