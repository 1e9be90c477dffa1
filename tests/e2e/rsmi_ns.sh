#!/usr/bin/env bash
# The rocm-smi provider against the real librocm_smi64 and a fake AMD GPU: the fixture
# tests/fixtures/telemetry/rsmi-ns is laid out as sysfs lays out a Radeon RX 7900 XTX (with the
# symlinks rocm-smi resolves), mounted over /sys/class in a private mount namespace, and the
# test binary's tele_rsmi_ns suite samples it. Exit 77 (skipped) without root or unshare.
#   rsmi_ns.sh TEST_TELE_RSMI SCRATCH_DIR
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 TEST_TELE_RSMI SCRATCH_DIR" >&2
    exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$2
fixture=$(cd "$(dirname "$0")/../fixtures/telemetry/rsmi-ns" && pwd)
fail() {
    echo "rsmi_ns: $*" >&2
    exit 1
}
skip() {
    echo "rsmi_ns: skipped: $*" >&2
    exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root to mount over /sys/class"
command -v unshare > /dev/null 2>&1 || skip "unshare is not installed"
unshare -m true 2> /dev/null || skip "unshare -m is not permitted here"
[ -x "$bin" ] || fail "$bin is not executable"

rm -rf "$dir"
mkdir -p "$dir" || fail "cannot create $dir"
dir=$(cd "$dir" && pwd)

# The device directory where sysfs has it, its drm and hwmon children linking back to it, and
# /sys/class entries as the links sysfs makes (rocm-smi reads the links' targets: the PCI
# address is the last path element that looks like one).
dev=$dir/devices/pci0000:00/0000:00:01.1/0000:03:00.0
mkdir -p "$(dirname "$dev")" "$dir/class/drm" "$dir/class/hwmon" "$dir/class/kfd" || fail "mkdir"
cp -r "$fixture/device" "$dev" || fail "copy the device"
for node in card0 renderD128; do
    mkdir -p "$dev/drm/$node"
    ln -s ../../../0000:03:00.0 "$dev/drm/$node/device"
    ln -s "$dev/drm/$node" "$dir/class/drm/$node"
done
ln -s ../../../0000:03:00.0 "$dev/hwmon/hwmon3/device"
ln -s "$dev/hwmon/hwmon3" "$dir/class/hwmon/hwmon3"
cp -r "$fixture/kfd" "$dir/class/kfd/kfd" || fail "copy the KFD tree"
for n in "$dir"/class/kfd/kfd/topology/nodes/*; do
    mkdir -p "$n/io_links" "$n/p2p_links" # empty: the lone GPU has no peer
done

# Criterion runs each test in a child, which inherits the namespace. The inner script expands
# its own arguments, hence the single quotes.
out=$dir/test.out
# shellcheck disable=SC2016
RINGSIDE_RSMI_NS_PROC="$fixture/proc" unshare -m sh -c \
    'mount --bind "$1" /sys/class && exec "$2" --filter "tele_rsmi_ns/*" --verbose' \
    sh "$dir/class" "$bin" > "$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "the test binary exited $rc"
grep -q 'Tested: [1-9][0-9]* | Passing: [1-9][0-9]* | Failing: 0 | Crashing: 0' "$out" ||
    fail "no test ran and passed"
grep -q '^\[SKIP\] tele_rsmi_ns::' "$out" && fail "a test was skipped inside the namespace"
exit 0
