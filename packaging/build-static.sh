#!/usr/bin/env bash
# Build static gearwheel binaries (musl, static-pie) and print each one's size and SHA-256.
#
#   packaging/build-static.sh                      # x86_64-unknown-linux-musl
#   packaging/build-static.sh aarch64-unknown-linux-musl
#   packaging/build-static.sh x86_64-unknown-linux-musl aarch64-unknown-linux-musl
#
# Needs the Rust standard library for each target (`rustup target add TARGET`; Debian has no
# package of it). aarch64 also needs a linker for it: aarch64-linux-musl-gcc or
# aarch64-linux-gnu-gcc (Debian: gcc-aarch64-linux-gnu) if on PATH, else rust-lld.
# The binaries are target/TARGET/release/gearwheel; exit 1 if a target cannot be built.
set -euo pipefail

cd "$(dirname "$0")/.."

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(x86_64-unknown-linux-musl)
fi

fail() {
    printf 'build-static: %s\n' "$*" >&2
    exit 1
}

for t in "${targets[@]}"; do
    case "$t" in
    *-linux-musl*) ;;
    *) fail "$t: only *-linux-musl targets give a static binary" ;;
    esac
    # The standard library for the target is a directory of .rlib files next to rustc's own.
    libdir="$(rustc --print target-libdir --target "$t" 2>/dev/null || true)"
    if [ -z "$libdir" ] || ! ls "$libdir"/libstd-*.rlib >/dev/null 2>&1; then
        msg="$t: the Rust standard library for this target is not installed"
        if command -v rustup >/dev/null 2>&1; then
            msg="$msg; install it with: rustup target add $t (it downloads from static.rust-lang.org)"
        else
            msg="$msg; install rustup, then: rustup target add $t"
        fi
        fail "$msg"
    fi
    env_linker=()
    case "$t" in
    aarch64-*)
        var="CARGO_TARGET_$(printf '%s' "$t" | tr 'a-z-' 'A-Z_')_LINKER"
        if [ -z "${!var:-}" ]; then
            for cc in aarch64-linux-musl-gcc aarch64-linux-gnu-gcc rust-lld; do
                if command -v "$cc" >/dev/null 2>&1; then
                    env_linker=("$var=$cc")
                    break
                fi
            done
            [ ${#env_linker[@]} -gt 0 ] || fail "$t: no linker (aarch64-linux-musl-gcc, aarch64-linux-gnu-gcc or rust-lld)"
        fi
        ;;
    esac
    printf '+ cargo build --release --locked --target %s\n' "$t"
    env "${env_linker[@]}" cargo build --release --locked --target "$t"
    bin="target/$t/release/gearwheel"
    # Static: no program interpreter and no shared libraries needed.
    if readelf -l "$bin" 2>/dev/null | grep -q 'Requesting program interpreter'; then
        fail "$bin is dynamically linked"
    fi
    if readelf -d "$bin" 2>/dev/null | grep -q '(NEEDED)'; then
        fail "$bin needs shared libraries: $(readelf -d "$bin" | grep NEEDED)"
    fi
    size="$(stat -c %s "$bin")"
    sha="$(sha256sum "$bin" | cut -d' ' -f1)"
    printf '%s\n  size    %s bytes\n  sha256  %s\n' "$bin" "$size" "$sha"
done
