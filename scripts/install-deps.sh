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
set -euo pipefail

required=(build-essential cmake pkg-config libncurses-dev libjson-c-dev libcriterion-dev
          libmicrohttpd-dev tmux curl tzdata zlib1g-dev libzstd-dev python3-torch python3-onnx
          python3-numpy)
# tzdata: the zone files --tz reads; zlib1g-dev, libzstd-dev: gzip and zstd data files;
# python3-torch, python3-onnx, python3-numpy: the test that reads a trained model from Python
if [ "${1:-}" = "--hip" ]; then
    required+=(hipcc libamdhip64-dev)
elif [ "${1:-}" = "--fuzz" ]; then
    required+=(clang libclang-rt-dev) # libclang-rt-dev: libFuzzer (only recommended by clang)
fi
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

missing=()
for p in "${required[@]}" "${optional[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all packages present"
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
fetch_promtool
