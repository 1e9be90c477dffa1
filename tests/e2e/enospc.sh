#!/usr/bin/env bash
# A full disk under the checkpoints: the output directory is a small tmpfs mounted in a private
# mount namespace (a user namespace too when not root), so the writes fail with ENOSPC for real.
# Training goes on to the end, the last good checkpoint stays byte for byte, no temp file is
# left, and ringside exits 1 saying which checkpoint was not written and which one is kept.
# Exit 77 (skipped) where unshare or the mount is not permitted.
#   enospc.sh RINGSIDE SCRATCH_DIR
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2
    exit 2
fi
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$2
fail() {
    echo "enospc: FAILED: $*" >&2
    exit 1
}
skip() {
    echo "SKIP: enospc: $*" >&2
    exit 77
}

# Outside: find a namespace we may enter, then run this script again inside it.
if [ "${RS_ENOSPC_INNER:-}" != 1 ]; then
    [ -x "$bin" ] || fail "$bin is not executable"
    command -v unshare > /dev/null 2>&1 || skip "unshare is not installed"
    if [ "$(id -u)" -eq 0 ]; then
        ns=(unshare --mount)
    else
        ns=(unshare --user --map-root-user --mount)
    fi
    "${ns[@]}" true 2> /dev/null || skip "'${ns[*]}' is not permitted here"
    rm -rf "$dir"
    mkdir -p "$dir" || fail "cannot create $dir"
    dir=$(cd "$dir" && pwd)
    RS_ENOSPC_INNER=1 exec "${ns[@]}" bash "$0" "$bin" "$dir"
fi

t0=$SECONDS
train() { # train OUTPUT_DIR NAME [ARGS...]: headless, small and quick; status in $rc
    local out=$1 name=$2
    shift 2
    "$bin" train --headless --backend cpu --synthetic-days 3 --telemetry none --no-kmsg \
        --output "$out" --jsonl "$dir/$name.jsonl" "$@" 2> "$dir/$name.err"
    rc=$?
}
mount_tmpfs() { # mount_tmpfs DIR KIB
    mkdir -p "$1" || fail "mkdir $1"
    mount -t tmpfs -o "size=$2k,mode=0755" ringside-enospc "$1" 2> "$dir/mount.err" ||
        skip "cannot mount a tmpfs here: $(cat "$dir/mount.err")"
}
no_temp_files() { # no_temp_files DIR
    local left
    left=$(find "$1" -name '*.tmp.*' | head -n 3)
    [ -z "$left" ] || fail "temp files left behind: $left"
}
expect_err() { # expect_err NAME TEXT: the run's stderr holds TEXT
    grep -qF -- "$2" "$dir/$1.err" || fail "$1: stderr lacks '$2': $(cat "$dir/$1.err")"
}
expect_summary() { # expect_summary NAME TEXT: the run's summary line holds TEXT
    tail -n 1 "$dir/$1.jsonl" | grep -qF -- "$2" ||
        fail "$1: the summary lacks '$2': $(tail -n 1 "$dir/$1.jsonl")"
}
pages() { echo $((($(stat -c %s "$1") + 4095) / 4096)); }

# 1. A checkpoint, then a full disk, then a resumed run: every checkpoint write fails.
out=$dir/full
mount_tmpfs "$out" 256
ck=$out/vpoc_mlp.rsmodel
meta=$out/vpoc_mlp_metadata.json
train "$out" first --epochs 1
[ $rc -eq 0 ] || fail "first run exited $rc: $(cat "$dir/first.err")"
cp "$ck" "$dir/good.rsmodel" || fail "copy the checkpoint"
cp "$meta" "$dir/good.json" || fail "copy the metadata"
dd if=/dev/zero of="$out/filler" bs=4k 2> /dev/null # stops at ENOSPC
if head -c 4096 /dev/zero > "$out/probe" 2> /dev/null; then
    fail "the tmpfs is not full"
fi
rm -f "$out/probe"
train "$out" full --epochs 2 --resume "$ck"
[ $rc -eq 1 ] || fail "on a full disk: exit $rc, not 1: $(cat "$dir/full.err")"
expect_err full "ringside: error: checkpoint for epoch 2 not written: cannot write $ck"
expect_err full "ringside train: finished after 3 epochs; checkpoint for epoch 3 not written: cannot write $ck"
expect_err full "No space left on device; the last good one (epoch 1, $ck) is kept"
[ "$(grep -c 'not written' "$dir/full.err")" -eq 3 ] || fail "full: not one line per failure"
expect_summary full '"state":"completed"'
expect_summary full '"checkpoint_epoch":1,"checkpoint_error":"cannot write'
cmp -s "$ck" "$dir/good.rsmodel" || fail "the last good checkpoint changed"
cmp -s "$meta" "$dir/good.json" || fail "the last good metadata changed"
no_temp_files "$out"

# 2. Room again: the kept checkpoint loads and the next one is written.
rm -f "$out/filler"
train "$out" again --epochs 1 --resume "$ck"
[ $rc -eq 0 ] || fail "with room again: exit $rc: $(cat "$dir/again.err")"
grep -qF "resuming $ck after epoch 1" "$dir/again.jsonl" || fail "the kept checkpoint did not load"
expect_summary again '"checkpoint_epoch":2}'
no_temp_files "$out"

# 3. One run on a disk with room for one checkpoint but not for its replacement beside it (the
# temp file): epoch 1 is written, 2 and 3 are not.
out=$dir/small
mount_tmpfs "$out" $(((2 * $(pages "$dir/good.rsmodel") + $(pages "$dir/good.json") - 1) * 4))
ck=$out/vpoc_mlp.rsmodel
train "$out" small --epochs 3
[ $rc -eq 1 ] || fail "small disk: exit $rc, not 1: $(cat "$dir/small.err")"
grep -qF "checkpoint written: $ck (epoch 1)" "$dir/small.jsonl" || fail "epoch 1 not written"
expect_err small "ringside train: finished after 3 epochs; checkpoint for epoch 3 not written"
expect_err small "No space left on device; the last good one (epoch 1, $ck) is kept"
no_temp_files "$out"
cp "$ck" "$dir/small.rsmodel" || fail "copy"

# 4. The dashboard, stopped on the full disk: the same, as its exit message and status.
rm -f "$out"/vpoc_mlp_metadata.json # make room for a filler that leaves none for a checkpoint
dd if=/dev/zero of="$out/filler" bs=4k 2> /dev/null
"$bin" --backend cpu --synthetic-days 3 --epochs 100000 --telemetry none --no-kmsg \
    --frames 3 -d 1 --resume "$ck" --output "$out" > "$dir/dash.screen" 2> "$dir/dash.err"
rc=$?
[ $rc -eq 1 ] || fail "dashboard on a full disk: exit $rc, not 1: $(cat "$dir/dash.err")"
expect_err dash "ringside: stopped after "
expect_err dash "No space left on device; the last good one (epoch 1, $ck) is kept"
cmp -s "$ck" "$dir/small.rsmodel" || fail "dashboard: the last good checkpoint changed"
no_temp_files "$out"
echo "enospc: ok ($((SECONDS - t0)) s)"
