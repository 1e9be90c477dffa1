#!/usr/bin/env bash
# End-to-end test of the dashboard: drives the real binary in a private tmux server (keys,
# resizes, quit) three times (default, NO_COLOR=1, TERM=xterm) and checks what the screen shows,
# the exit status, the checkpoint and the terminal modes afterwards.
#
# usage: dashboard.sh RINGSIDE SCRATCH_DIR
# E2E_BACKEND (default cpu) picks the compute backend; with hip the header must show it.
# Every wait polls capture-pane against a deadline; on a failure the step and the last screen
# are printed and the script exits 1. The tmux server is killed on every exit path.
E2E_NAME="dashboard e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# The events panel: the lines from its title row (with the per-category counts) down.
events_has() {
    printf '%s\n' "$SCREEN" | awk '/ events .*command [0-9]/ { on = 1; next } on' |
        grep -E -- "$1" > /dev/null
}
# The timeline has a row per phase active in its span: a "vpoc" row with a mark in it
# (a block glyph, or the letter v without UTF-8), or in its compact form a 'v' cell of dev0.
timeline_shows_vpoc() {
    printf '%s\n' "$SCREEN" | grep -E '^ vpoc ' | cut -c13- | grep -qv '^[ ·]*$' ||
        printf '%s\n' "$SCREEN" | grep '^ dev0' | cut -c13- | grep -q v
}
footer_ok() { printf '%s\n' "$SCREEN" | tail -n 1 | grep -q '^ *q quit'; }
width_is() { [ "$(tm display -p -t "$SESSION" '#{pane_width}x#{pane_height}')" = "$1" ]; }
layout_at() { width_is "$1" && footer_ok && has "memory pool" && ! has "terminal too small"; }
normal_at() { layout_at "$1" && has "timeline" && has "synchronize" && header_has "RUNNING"; }
# The GPU overlay's doctor section: "doctor HH:MM:SS: N ok, N warn, N fail, N skipped".
doctor_summary() {
    printf '%s\n' "$SCREEN" | grep -E 'doctor [0-9]{2}:[0-9]{2}:[0-9]{2}: [0-9]+ ok, ' |
        grep -q 'skipped'
}
overlay_closed() { ! doctor_summary && normal_at 120x40; }
too_small() { width_is "$1" && has "terminal too small"; }

# The pane's script: terminal modes before and after, ringside's exit status.
write_runner() {
    cat > "$OUT/run.sh" << 'EOF'
out=$1
shift
stty -a > "$out/stty.before" 2>&1
env "$@" --backend "${E2E_BACKEND:-cpu}" --synthetic-days 20 --epochs 100000 --output "$out"
echo "exit=$?" > "$out/status"
stty -a > "$out/stty.after" 2>&1
: > "$out/done"
EOF
}

# run_variant NAME [VAR=VALUE...]: the whole scenario once, with the variables set for ringside.
run_variant() {
    VARIANT=$1
    shift
    OUT="$SCRATCH/$VARIANT"
    rm -rf "$OUT"
    mkdir -p "$OUT" || fail "cannot create $OUT"
    write_runner
    local t0=$SECONDS
    STEP="start tmux"
    tm new-session -d -s "$SESSION" -x 120 -y 40 sh "$OUT/run.sh" "$OUT" "$@" "$RINGSIDE" ||
        fail "tmux new-session failed"

    wait_for "dashboard up (RUNNING at 120x40)" 30 normal_at 120x40
    wait_for "header names the ${E2E_BACKEND:-cpu} backend" 10 header_has "${E2E_BACKEND:-cpu}"
    wait_for "timeline shows a vpoc phase" 60 timeline_shows_vpoc

    tm send-keys -t "$SESSION" +
    wait_for "'+': header shows chunk 500 bars" 10 header_has "chunk 500 bars"
    wait_for "'+': events panel shows set_chunk" 10 events_has "set_chunk"
    # the dense kernel's matrix at the next pass: the memory panel names that pass's chunk
    wait_for "'+': memory panel shows the VPOC peak at chunk 500" 60 has "VPOC peak (chunk 500"

    tm send-keys -t "$SESSION" c
    wait_for "'c': cleanup result with bytes released" 15 events_has "cleanup:.*released"

    tm send-keys -t "$SESSION" p
    wait_for "'p': header shows PAUSED" 10 header_has "PAUSED"
    tm send-keys -t "$SESSION" p
    wait_for "'p' again: header shows RUNNING" 10 header_has "RUNNING"

    tm send-keys -t "$SESSION" D
    wait_for "'D': the doctor's result in a notice" 30 has "g: GPU details"
    tm send-keys -t "$SESSION" g
    wait_for "'g': the overlay shows the doctor's summary" 10 doctor_summary
    tm send-keys -t "$SESSION" g
    wait_for "'g' again: the overlay closes" 10 overlay_closed

    STEP="resize to 80x24"
    tm resize-window -t "$SESSION" -x 80 -y 24 || fail "resize-window failed"
    wait_for "layout at 80x24 (footer, memory pool)" 10 layout_at 80x24
    STEP="resize to 50x12"
    tm resize-window -t "$SESSION" -x 50 -y 12 || fail "resize-window failed"
    wait_for "'terminal too small' at 50x12" 10 too_small 50x12
    STEP="resize back to 120x40"
    tm resize-window -t "$SESSION" -x 120 -y 40 || fail "resize-window failed"
    wait_for "normal screen again at 120x40" 10 normal_at 120x40

    tm send-keys -t "$SESSION" q
    wait_for "'q': ringside exits and the pane's script finishes" 30 file_exists "$OUT/done"
    wait_for "'q': the tmux session ends" 10 session_gone

    STEP="exit status"
    grep -qx 'exit=0' "$OUT/status" || fail "ringside: $(cat "$OUT/status")"
    STEP="checkpoint written"
    [ -s "$OUT/vpoc_mlp.rsmodel" ] || fail "no $OUT/vpoc_mlp.rsmodel"
    STEP="terminal modes restored"
    diff "$OUT/stty.before" "$OUT/stty.after" > "$OUT/stty.diff" ||
        fail "stty -a differs after ringside exited: $(cat "$OUT/stty.diff")"
    echo "dashboard e2e [$VARIANT]: ok ($((SECONDS - t0)) s)"
}

mkdir -p "$SCRATCH" || exit 1
run_variant default
run_variant no-color NO_COLOR=1
run_variant xterm TERM=xterm
echo "dashboard e2e: all variants passed"
