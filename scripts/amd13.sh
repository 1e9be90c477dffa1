#!/usr/bin/env bash
# The AMD build with Debian 13's ROCm toolchain (hipcc 5.7.1, which targets RDNA3: gfx1100, the
# RX 7900 cards), in a Debian 13 chroot made from the Debian archive, and its tests there (on a
# machine without an AMD GPU: the CPU fallback; the GPU suite skips). Debian 12's hipcc 5.2
# cannot build gfx1100 code; CI keeps that build (scripts/dev.sh amd).
#   scripts/amd13.sh            build the chroot once (debootstrap, some 2 GB), then build and
#                               test the working tree in it
# Environment: AMD13_ROOT (default /var/tmp/ringside-amd13: outside the tree, which is mounted
# into it), AMD13_MIRROR (default
# http://deb.debian.org/debian), AMD13_ARCHS (default "gfx1100;gfx1030;gfx90a"). Needs root (it
# makes the chroot and mounts the tree into it). The log of each step is in build-amd13/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build-amd13
root=${AMD13_ROOT:-/var/tmp/ringside-amd13}
mirror=${AMD13_MIRROR:-http://deb.debian.org/debian}
archs=${AMD13_ARCHS:-gfx1100;gfx1030;gfx90a}
jobs=$(nproc 2>/dev/null || echo 2)

die() {
    echo "amd13: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts): run it with sudo"
mkdir -p "$out"

# What the build and the tests need, from Debian 13: the ROCm toolchain and runtime, RCCL (the
# multi-GPU path loads it at run time), rocm-smi, and what every build needs.
pkgs=(build-essential cmake pkg-config libncurses-dev libjson-c-dev libcriterion-dev
      libmicrohttpd-dev libgnutls28-dev libcurl4-gnutls-dev tmux tzdata zlib1g-dev libzstd-dev
      libdrm-dev locales
      python3 curl openssl ca-certificates
      hipcc libamdhip64-dev librccl-dev librocm-smi-dev)

# (installed again when a package added since the chroot was made is missing)
if [ ! -x "$root/usr/bin/hipcc" ] || [ ! -x "$root/usr/bin/curl" ] ||
    [ ! -x "$root/usr/bin/openssl" ] || [ ! -e "$root/usr/include/x86_64-linux-gnu/curl/curl.h" ] ||
    [ ! -e "$root/etc/ssl/certs/ca-certificates.crt" ]; then
    command -v debootstrap >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; } ||
        die "cannot install debootstrap"
    if [ ! -x "$root/usr/bin/apt-get" ]; then
        echo "amd13: debootstrap trixie into $root (log: $out/debootstrap.log)"
        debootstrap --variant=minbase trixie "$root" "$mirror" >"$out/debootstrap.log" 2>&1 ||
            { tail -n 20 "$out/debootstrap.log"; die "debootstrap failed"; }
    fi
    echo "amd13: installing ${#pkgs[@]} packages in the chroot (log: $out/apt.log)"
    chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
        "apt-get update && apt-get install -y --no-install-recommends $(printf '%s ' "${pkgs[@]}")" \
        >"$out/apt.log" 2>&1 || { tail -n 30 "$out/apt.log"; die "apt-get in the chroot failed"; }
    # the decimal-comma locale of the CSV reader's test
    chroot "$root" sh -c "sed -i 's/^# *de_DE.UTF-8 UTF-8/de_DE.UTF-8 UTF-8/' /etc/locale.gen && \
        locale-gen" >>"$out/apt.log" 2>&1 || true
fi

# The tree, /proc and /dev inside the chroot for the build and the tests; undone on any exit.
mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
mnt() { # source target [mount options...]
    local src=$1 dst=$2
    shift 2
    mkdir -p "$dst"
    mount "$@" "$src" "$dst"
    mounted+=("$dst")
}
mnt "$top" "$root/src" --bind
mnt proc "$root/proc" -t proc
mnt /sys "$root/sys" --bind
mnt /dev "$root/dev" --bind
mnt /dev/pts "$root/dev/pts" --bind

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=xterm "$@"; }

hipcc_v=$(in_root hipcc --version 2>&1 | grep -m1 -i 'HIP version' || true)
echo "amd13: ${hipcc_v:-hipcc (version unknown)}; archs $archs"
echo "amd13: configure and build (log: $out/build.log)"
in_root sh -c "cmake -S /src -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_WERROR=ON \
    -DRINGSIDE_HIP=AMD -DRINGSIDE_HIP_ARCHS='$archs' -DRS_BENCH=OFF && \
    cmake --build /build -j$jobs" >"$out/build.log" 2>&1 ||
    { tail -n 40 "$out/build.log"; die "the build failed"; }
grep -E '^-- (ringside|  )' "$out/build.log" || true
grep -q "dropped arch" "$out/build.log" && die "hipcc dropped an arch: see $out/build.log"

# Every kernel image in the library, by target: the offload bundle's entry names in each
# object ("hipv4-amdgcn-amd-amdhsa--gfx1100"), counted by arch.
echo "amd13: kernel images in librs_kernels.a (objects holding code for each target):"
in_root sh -c 'cd /tmp && rm -rf rs-ko && mkdir rs-ko && cd rs-ko && \
    ar x /build/kernels/librs_kernels.a && for o in *.o; do \
    grep -a -o "amdgcn-amd-amdhsa--gfx[0-9a-f]*" "$o" | sort -u; done | \
    sed "s/.*--//" | sort | uniq -c' | sed 's/^/  /'

# The multi-GPU path against the real RCCL: the loader resolves every function it uses.
echo "amd13: RCCL as the multi-GPU path loads it:"
in_root /build/ringside doctor --backend cpu --comm-lib librccl.so.1 2>&1 |
    grep -iE 'comm library|rccl' | sed 's/^/  /' || echo "  (the doctor printed no library row)"

# Every test but the Python-driven ones (they need PyTorch in the chroot; the CPU build runs them).
echo "amd13: tests (log: $out/test.log)"
rc=0
in_root sh -c "cd /build && ctest --output-on-failure -j$jobs -E '^(e2e_watch|e2e_model)\$'" \
    >"$out/test.log" 2>&1 || rc=$?
grep -E '^[0-9]+% tests passed|tests failed|\(Skipped\)|\*\*\*' "$out/test.log" | sed 's/^/  /'
exit $rc
