#!/usr/bin/env bash
# End-to-end test of the dashboard's signals: SIGTERM and SIGHUP (the tmux pane closed) stop it
# gracefully (exit 0, a checkpoint); a crash (SIGSEGV, SIGABRT) leaves the terminal as it found
# it (`stty -a` unchanged) and dies of the same signal.
#
# usage: signals.sh RINGSIDE SCRATCH_DIR
E2E_NAME="signals e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1

# run_case NAME: start ringside in a pane from a shell that records the terminal settings
# before and after, and ringside's exit status
run_case() {
    local d=$SCRATCH/$1
    mkdir -p "$d"
    OUT=$d/out
    tm new-session -d -s "$SESSION" -x 120 -y 40 sh -c "stty -a > '$d/before'; \
        '$RINGSIDE' --backend cpu --synthetic-days 5 --epochs 100000 --telemetry none \
            --no-kmsg --output '$OUT' < /dev/tty & echo \$! > '$d/pid'; wait \$!; \
        rc=\$?; stty -a > '$d/after'; echo \$rc > '$d/rc'; sleep 30" || fail "tmux new-session failed"
    wait_for "$1: the dashboard is up" 30 has "RUNNING"
    PID=$(cat "$d/pid")
    DIR=$d
}
rc_is() { [ -s "$DIR/rc" ] && [ "$(cat "$DIR/rc")" = "$1" ]; }
stop_case() { next_server; }

run_case term
kill -TERM "$PID"
wait_for "SIGTERM: a graceful stop, exit 0" 60 rc_is 0
[ -s "$OUT/vpoc_mlp.rsmodel" ] || fail "SIGTERM: no checkpoint written"
cmp -s "$DIR/before" "$DIR/after" || fail "SIGTERM: terminal settings changed"
stop_case

run_case hup
kill -HUP "$PID"
wait_for "SIGHUP: a graceful stop without the terminal, exit 0" 60 rc_is 0
[ -s "$OUT/vpoc_mlp.rsmodel" ] || fail "SIGHUP: no checkpoint written"
stop_case

for sig in SEGV ABRT; do
    run_case "$sig"
    kill -"$sig" "$PID"
    want=$((128 + $(kill -l "$sig")))
    wait_for "SIG$sig: dies of the signal (status $want)" 30 rc_is "$want"
    diff "$DIR/before" "$DIR/after" > /dev/null || fail "SIG$sig: terminal settings changed: $(diff "$DIR/before" "$DIR/after")"
    wait_for "SIG$sig: the screen is the shell's again (alternate screen left)" 10 eval '! has "RUNNING"'
    stop_case
done
echo "signals e2e: ok ($((SECONDS - t0)) s)"
