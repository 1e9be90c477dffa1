#!/usr/bin/env bash
# Install what ringside needs to build and test on Debian 12 / Ubuntu 24.04 (idempotent).
# Runs apt-get as root, or through sudo; installs nothing when everything is present.
#   install-deps.sh          the build and test dependencies, and promtool (Prometheus' own
#                            checker of /metrics, taken out of Debian's prometheus package into
#                            build-tools/ without installing the server)
#   install-deps.sh --hip    also Debian's HIP toolchain (hipcc, the HIP runtime) for the AMD
#                            build of the GPU backend
#   install-deps.sh --fuzz   also clang and its runtime libraries (libFuzzer, the sanitizers)
#                            for the fuzz build
#   install-deps.sh --all    all of these at once, in one apt transaction (what CI installs
#                            in the background while the first stage builds and tests)
set -euo pipefail

required=(build-essential cmake pkg-config libncurses-dev libjson-c-dev libcriterion-dev
          libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev tmux curl openssl tzdata
          zlib1g-dev libzstd-dev python3-torch python3-onnx python3-numpy python3-pip locales
          ca-certificates man-db groff-base)
# libgnutls28-dev: the agent's HTTPS (libmicrohttpd serves it with GnuTLS, and the agent checks
# its certificate and key with it); openssl: the agent test makes its HTTPS certificate with it;
# libcurl4-gnutls-dev: attach's HTTP and TLS client; ca-certificates: the system's CA store,
# which https:// checks against without --cacert (the tests refuse a certificate it does not
# vouch for);
# tzdata: the zone files --tz reads; zlib1g-dev, libzstd-dev: gzip and zstd data files;
# python3-torch, python3-onnx, python3-numpy: the test that reads a trained model from Python;
# python3-pip: the test that installs the Python bridge with pip (offline, from the tree);
# locales: a locale with a decimal comma (de_DE.UTF-8, made below), for the test that the CSV
# reader's numbers do not follow LC_NUMERIC; man-db, groff-base: the test that the man pages
# are found and render without a warning
case "${1:-}" in
--hip) required+=(hipcc libamdhip64-dev) ;;
--fuzz) required+=(clang libclang-rt-dev) ;; # libclang-rt-dev: libFuzzer (only recommended)
--all) required+=(hipcc libamdhip64-dev clang libclang-rt-dev) ;;
esac
# Telemetry libraries: used when present, never required to build.
optional=(libdrm-dev librocm-smi-dev)

top=$(cd "$(dirname "$0")/.." && pwd)

# promtool into build-tools/bin (the tests look there), unless one is on the PATH already.
fetch_promtool() {
    local dest=$top/build-tools
    if command -v promtool >/dev/null 2>&1 || [ -x "$dest/bin/promtool" ]; then
        return 0
    fi
    local work
    work=$(mktemp -d)
    if (cd "$work" && apt-get download prometheus >/dev/null 2>&1); then
        dpkg -x "$work"/prometheus_*.deb "$work/x"
        mkdir -p "$dest/bin"
        cp "$work/x/usr/bin/promtool" "$dest/bin/promtool"
        echo "install-deps: promtool in $dest/bin"
    else
        echo "install-deps: could not fetch Debian's prometheus package; the agent test will" \
            "check /metrics without promtool"
    fi
    rm -rf "$work"
}

# de_DE.UTF-8, made once with locale-gen (Debian's locales package ships no compiled locale).
make_locale() {
    if locale -a 2>/dev/null | grep -qix 'de_DE.utf8'; then
        return 0
    fi
    local root=()
    [ "$(id -u)" -eq 0 ] || root=(sudo)
    if [ -f /etc/locale.gen ] && command -v locale-gen >/dev/null 2>&1; then
        "${root[@]}" sed -i 's/^# *de_DE.UTF-8 UTF-8/de_DE.UTF-8 UTF-8/' /etc/locale.gen
        grep -q '^de_DE.UTF-8 UTF-8' /etc/locale.gen ||
            echo 'de_DE.UTF-8 UTF-8' | "${root[@]}" tee -a /etc/locale.gen >/dev/null
        "${root[@]}" locale-gen >/dev/null && echo "install-deps: locale de_DE.UTF-8 made"
    else
        echo "install-deps: cannot make de_DE.UTF-8 (no locale-gen); its test will skip"
    fi
}

missing=()
for p in "${required[@]}" "${optional[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
    make_locale
    fetch_promtool
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root or install sudo, or install them yourself" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${required[@]}"
for p in "${optional[@]}"; do
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 ||
        echo "install-deps: optional package $p is not available here; skipping"
done
make_locale
fetch_promtool
