#!/usr/bin/env bash
# End-to-end test of a hung GPU call, rehearsed with --inject on the CPU backend (or the one
# E2E_BACKEND names: with hip the hang is the hang kernel on the GPU's stream): the first
# synchronize in the pre-training cleanup hangs for 40 s; within the 5 s sync timeout and a
# second the header says HUNG while its clock keeps moving, the watchdog's alert names the call
# and the diagnostic bundle is written; q asks for a stop that cannot finish, the footer says which
# call holds it and when the stop deadline leaves by itself, q again
# leaves at once (status 3) with the terminal as it was. A 3 s hang in a training step with a
# 2 s timeout goes HUNG and comes back: the alert says how long it took and training goes on.
#
# usage: hang.sh RINGSIDE SCRATCH_DIR
E2E_NAME="hang e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1

start() { # name, extra flags...
    local d=$SCRATCH/$1
    shift
    mkdir -p "$d"
    OUT=$d/out
    DIR=$d
    tm new-session -d -s "$SESSION" -x 160 -y 48 sh -c "stty -a > '$d/before'; \
        '$RINGSIDE' --backend ${E2E_BACKEND:-cpu} --synthetic-days 5 --epochs 100000 --telemetry none \
            --no-kmsg --output '$OUT' $* < /dev/tty; rc=\$?; \
        stty -a > '$d/after'; echo \$rc > '$d/rc'; sleep 30" || fail "tmux new-session failed"
}
rc_is() { [ -s "$DIR/rc" ] && [ "$(cat "$DIR/rc")" = "$1" ]; }
clock() { printf '%s\n' "$SCREEN" | head -n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | tail -n 1; }

start cleanup --inject hang:cleanup:40 --sync-slow 1 --sync-timeout 5
wait_for "the cleanup's synchronize is in flight" 30 has "sync in cleanup for"
hung() { header_has "HUNG" && has "HANG (over the 5 s sync timeout)"; }
wait_for "HUNG in the header and the watchdog's alert within 5 s + 1 s" 6 hung
bundle() { has "hang diagnostics written to" && grep -qs '"bundle":"ringside hang diagnostics"' "$OUT"/hang-*.json; }
wait_for "the diagnostic bundle is written, and the events say where" 5 bundle
grep -q '"kernel_log":\[' "$OUT"/hang-*.json && grep -q '"events":\[' "$OUT"/hang-*.json &&
    grep -q '"config":' "$OUT"/hang-*.json || fail "the bundle lacks a section"
c1=$(clock)
clock_moves() { [ "$(clock)" != "$c1" ]; }
wait_for "the header's clock keeps moving while the call hangs" 5 clock_moves
tm send-keys -t "$SESSION" c
wait_for "c: the safe cleanup is refused while a sync hangs" 5 has "safe cleanup refused: a device sync in cleanup has hung"
tm send-keys -t "$SESSION" q
footer() { has "not stopping: q leaves now, by itself in" && has "a device sync in cleanup has been in flight"; }
wait_for "q: the footer names the call that holds the stop and when it leaves by itself" 10 footer
tm send-keys -t "$SESSION" q
wait_for "q again leaves at once, with status 3" 3 rc_is 3
cmp -s "$DIR/before" "$DIR/after" || fail "the terminal settings changed: $(diff "$DIR/before" "$DIR/after")"
next_server

start step --inject hang:forward:3 --sync-slow 1 --sync-timeout 2
wait_for "a training step's synchronize hangs: HUNG" 30 header_has "HUNG"
back() { header_has "RUNNING" && has "returned after about"; }
wait_for "it returns: back to RUNNING, and the alert says after how long" 10 back
step1=$(printf '%s\n' "$SCREEN" | grep -oE 'step [0-9]+' | head -n 1)
steps_move() { [ "$(printf '%s\n' "$SCREEN" | grep -oE 'step [0-9]+' | head -n 1)" != "$step1" ]; }
wait_for "training goes on" 10 steps_move
tm send-keys -t "$SESSION" q
wait_for "q ends the run normally" 60 rc_is 0
echo "hang e2e: ok ($((SECONDS - t0)) s)"
