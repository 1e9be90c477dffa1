#!/usr/bin/env bash
# End-to-end test of the rehearsed allocation and runtime faults, headless, on the CPU backend
# (or the one E2E_BACKEND names): oom:vpoc is reported with the pool's numbers, the chunk drops
# a rung and the run finishes (exit 0); error:PHASE:NAME ends the run with the runtime's text
# (exit 1); a bad spec is one line on stderr and exit 2.
#
# usage: inject.sh RINGSIDE SCRATCH_DIR
set -u
if [ $# -ne 2 ]; then
    echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2
    exit 2
fi
RINGSIDE=$1
SCRATCH=$2
BACKEND=${E2E_BACKEND:-cpu}
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
fail() {
    echo "inject e2e [$BACKEND]: FAILED: $*" >&2
    for f in "$SCRATCH"/*.err; do
        [ -s "$f" ] && { echo "---- $f ----" >&2; tail -n 5 "$f" >&2; }
    done
    exit 1
}
run() { # name, flags...: headless run, events to NAME.jsonl, stderr to NAME.err; sets RC
    local name=$1
    shift
    "$RINGSIDE" train --headless --backend "$BACKEND" --synthetic-days 5 --epochs 2 \
        --output "$SCRATCH/$name" --jsonl "$SCRATCH/$name.jsonl" "$@" 2> "$SCRATCH/$name.err"
    RC=$?
}
event() { # name, type, severity, text
    grep -F "\"type\":\"$2\"" "$SCRATCH/$1.jsonl" | grep -F "\"severity\":\"$3\"" | grep -qF -- "$4"
}

run oom --chunk 500 --inject oom:vpoc
[ "$RC" = 0 ] || fail "oom:vpoc: exit $RC, want 0 (the run goes on)"
event oom log error "out of memory (injected) allocating" || fail "oom:vpoc: no error event"
event oom log error "largest free block" || fail "oom:vpoc: the error lacks the pool's numbers"
event oom log warning "VPOC out of memory at chunk 500 bars: dropping to 250" ||
    fail "oom:vpoc: no chunk drop"
grep -qF '"type":"summary","state":"completed"' "$SCRATCH/oom.jsonl" ||
    fail "oom:vpoc: the run did not finish"
[ -s "$SCRATCH/oom/vpoc_mlp.rsmodel" ] || fail "oom:vpoc: no checkpoint"

run err --inject error:forward:no-kernel-image
[ "$RC" = 1 ] || fail "error:forward:no-kernel-image: exit $RC, want 1"
event err alert error "no kernel image is available for execution on the device" ||
    fail "error: no alert with the runtime's text"
[ "$(wc -l < "$SCRATCH/err.err")" -ge 1 ] && grep -qF "no kernel image" "$SCRATCH/err.err" ||
    fail "error: stderr does not say why"

for spec in oom:eval error:vpoc:nonsense hang:vpoc oom bogus:vpoc; do
    run bad --inject "$spec"
    [ "$RC" = 2 ] || fail "--inject $spec: exit $RC, want 2"
    head -n 1 "$SCRATCH/bad.err" | grep -qF -- "--inject '$spec'" ||
        fail "--inject $spec: the first line does not name the spec: $(head -n 1 "$SCRATCH/bad.err")"
done
echo "inject e2e [$BACKEND]: ok (oom drops the chunk and finishes; error ends with the runtime's text; bad specs exit 2)"
