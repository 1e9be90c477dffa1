#!/usr/bin/env bash
# A build with the HIP backend on a machine without a usable GPU: `--backend auto` trains on
# the CPU and says why, `--backend hip` stops at once with a "no HIP device" error (exit 2) and
# writes nothing. Exit 77 (skipped) where a HIP device is present.
#   hip_fallback.sh RINGSIDE SCRATCH_DIR
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2
    exit 2
fi
rs=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
fail() {
    echo "hip_fallback: $*" >&2
    exit 1
}

"$rs" --version | grep -q 'hip' || fail "this build has no hip backend: $("$rs" --version)"

"$rs" train --headless --backend hip --synthetic-days 5 --epochs 1 --output "$dir/hip" \
    > "$dir/hip.jsonl" 2> "$dir/hip.err"
rc=$?
if [ $rc -eq 0 ]; then
    echo "hip_fallback: a HIP device is present; nothing to check" >&2
    exit 77
fi
[ $rc -eq 2 ] || fail "--backend hip exited $rc, expected 2: $(cat "$dir/hip.err")"
grep -q 'no HIP device' "$dir/hip.err" || fail "--backend hip said: $(cat "$dir/hip.err")"
[ "$(wc -l < "$dir/hip.err")" -eq 1 ] || fail "expected one line of error: $(cat "$dir/hip.err")"
[ ! -e "$dir/hip" ] || fail "--backend hip left $dir/hip behind"

"$rs" train --headless --backend auto --synthetic-days 5 --epochs 1 --output "$dir/auto" \
    > "$dir/auto.jsonl" 2> "$dir/auto.err"
rc=$?
[ $rc -eq 0 ] || fail "--backend auto exited $rc: $(cat "$dir/auto.err")"
grep -q 'no HIP device.*using cpu' "$dir/auto.err" ||
    fail "no fallback notice on stderr: $(cat "$dir/auto.err")"
grep -q '"backend":"cpu"' "$dir/auto.jsonl" || fail "the run line does not say backend cpu"
grep -q '"type":"log".*no HIP device' "$dir/auto.jsonl" || fail "no fallback notice event"
grep -q '"val_loss"' "$dir/auto.jsonl" || fail "no validation loss: the run did not train"
[ -s "$dir/auto/ringside.rsmodel" ] || [ -n "$(ls "$dir/auto"/*.rsmodel 2> /dev/null)" ] ||
    fail "no checkpoint in $dir/auto"
echo "hip_fallback: ok (auto fell back to cpu with a notice; hip failed with one clear line)"
