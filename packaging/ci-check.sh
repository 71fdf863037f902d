#!/usr/bin/env bash
# The Debian package, checked the way an admin would use it (run by .ci/run after the tests,
# as root on a Debian machine): build it with cargo-deb, lint it, install it with dpkg -i,
# check `gearwheel --version`, start the installed binary as the unit would (the package's
# user, /etc/default/gearwheel's flags, its state directory), run one job through it, verify
# the units with systemd-analyze where systemd is installed, and purge it again.
set -euo pipefail

cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
run() {
    printf '+ %s\n' "$*"
    "$@"
}

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
work="$(mktemp -d)"
server_pid=""
worker_pid=""
cleanup() {
    for p in $worker_pid $server_pid; do
        kill "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

step "cargo-deb"
if ! cargo deb --version >/dev/null 2>&1; then
    # About 5 minutes on two cores; crates.io is reachable from CI.
    run cargo install cargo-deb --locked
fi
run cargo deb --version

step "Building the package"
run cargo deb
deb="target/debian/gearwheel_${version}-1_$(dpkg --print-architecture).deb"
run dpkg-deb --info "$deb"
run dpkg-deb --contents "$deb"

step "lintian"
if ! command -v lintian >/dev/null 2>&1; then
    run apt-get install -y --no-install-recommends lintian || true
fi
if command -v lintian >/dev/null 2>&1; then
    # Errors fail the check; warnings are listed.
    run lintian --fail-on error "$deb"
else
    echo "SKIP: lintian could not be installed"
fi

step "Installing with dpkg -i"
if dpkg -s gearwheel >/dev/null 2>&1; then
    run dpkg --purge gearwheel
fi
run dpkg -i "$deb"
run getent passwd gearwheel
run stat -c '%U:%G %a %n' /var/lib/gearwheel
run test -x /usr/bin/gearwheel
for f in /lib/systemd/system/gearwheel.service /lib/systemd/system/gearwheel-work@.service \
    /etc/default/gearwheel /etc/default/gearwheel-work /etc/gearwheel/schedules.cron; do
    run test -f "$f"
done

step "Every relative link of the installed documentation resolves"
# The README and docs/ are read in /usr/share/doc/gearwheel, away from the repository: a link
# to a file the package does not ship goes nowhere there.
broken=0
while IFS= read -r md; do
    dir="$(dirname "$md")"
    while IFS= read -r target; do
        target="${target%%#*}"
        [ -z "$target" ] && continue
        if [ ! -e "$dir/$target" ]; then
            echo "broken link in $md: $target" >&2
            broken=1
        fi
    done < <(grep -oE '\]\([^)]+\)' "$md" | sed -E 's/^\]\(//; s/\)$//' | grep -vE '^(https?:|mailto:|#)')
done < <(find /usr/share/doc/gearwheel -name '*.md')
[ "$broken" = 0 ] || exit 1
echo "all links resolve"

step "gearwheel --version"
got="$(/usr/bin/gearwheel --version)"
printf '%s\n' "$got"
[ "$got" = "gearwheel $version" ] || { echo "expected gearwheel $version" >&2; exit 1; }

step "The installed schedules file and an imported crontab pass gearwheel check"
run /usr/bin/gearwheel check /etc/gearwheel/schedules.cron
printf '*/5 * * * * /usr/bin/true\n' | run /usr/bin/gearwheel import-crontab --host ci --check >/dev/null

step "Starting the installed server with the installed defaults, as the unit would"
# The unit: User=gearwheel, EnvironmentFile=/etc/default/gearwheel, WorkingDirectory and
# StateDirectory /var/lib/gearwheel, ExecStart=/usr/bin/gearwheel serve $GEARWHEEL_OPTS.
# shellcheck disable=SC1091
. /etc/default/gearwheel
opts="$GEARWHEEL_OPTS"
port="$(printf '%s\n' "$opts" | sed -n 's/.*--port \([0-9]*\).*/\1/p')"
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    # A gearmand from the interop tests' packages may hold the Gearman port.
    echo "port $port is taken on this machine; using 47301 instead for this check"
    opts="${opts/--port $port/--port 47301}"
    port=47301
fi
log="$work/server.log"
(cd /var/lib/gearwheel && exec runuser -u gearwheel -- /usr/bin/gearwheel serve $opts) 2>"$log" &
server_pid=$!
for _ in $(seq 100); do
    grep -q 'Listening on' "$log" && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$log"; echo "the server exited" >&2; exit 1; }
    sleep 0.1
done
cat "$log"
grep -q "Listening on 127.0.0.1:$port" "$log"

step "One job through it"
/usr/bin/gearwheel work -s "127.0.0.1:$port" -f ci.upper -- tr a-z A-Z 2>"$work/worker.log" &
worker_pid=$!
got=""
for _ in $(seq 50); do
    got="$(/usr/bin/gearwheel submit -s "127.0.0.1:$port" -f ci.upper 'hello from the package' 2>/dev/null)" && break
    sleep 0.2
done
printf 'result: %s\n' "$got"
[ "$got" = "HELLO FROM THE PACKAGE" ] || { cat "$work/worker.log" "$log"; exit 1; }
# A background job goes through the journal in the state directory.
run /usr/bin/gearwheel submit -s "127.0.0.1:$port" -f ci.upper -b 'in the background'
run /usr/bin/gearwheel admin -s "127.0.0.1:$port" status
run ls -l /var/lib/gearwheel
kill "$worker_pid" "$server_pid"
wait "$server_pid" || true
server_pid=""
worker_pid=""

step "systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
    # Documentation=man:... is checked too where man is installed to look the pages up.
    man=(--man=yes)
    if ! command -v man >/dev/null 2>&1; then
        echo "man is not installed: verifying without the Documentation= check"
        man=(--man=no)
    fi
    run test -f /usr/share/man/man1/gearwheel.1.gz
    run test -f /usr/share/man/man5/gearwheel-schedules.5.gz
    run systemd-analyze verify "${man[@]}" /lib/systemd/system/gearwheel.service
    # A template is verified through an instance; the instance's executable must exist.
    mkdir -p /etc/gearwheel/work
    printf '#!/bin/sh\nexec cat\n' >/etc/gearwheel/work/ci.cat
    chmod 755 /etc/gearwheel/work/ci.cat
    run systemd-analyze verify "${man[@]}" gearwheel-work@ci.cat.service
    rm -f /etc/gearwheel/work/ci.cat
    run systemd-analyze security --offline=true /lib/systemd/system/gearwheel.service || true
else
    echo "SKIP: systemd-analyze is not installed"
fi

step "Purging"
run dpkg --purge gearwheel
[ ! -e /usr/bin/gearwheel ] && [ ! -e /var/lib/gearwheel ] || { echo "purge left files" >&2; exit 1; }

step "Package check passed"
