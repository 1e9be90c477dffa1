# shellcheck shell=bash
# Shared by the end-to-end scripts: arguments, a private tmux server killed on every exit
# path, screen capture, failure reports and polling against a deadline. The including script
# sets E2E_NAME (for messages) and may set OUT (a run's output dir, for session.log on failure)
# and VARIANT, then sources this file with its own "$@".
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2
    exit 2
fi
RINGSIDE=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
export SCRATCH=$2 # used by the including script
SOCK="rs-e2e-$$"
SESSION=rs
STEP="start"
SCREEN=""
OUT=${OUT:-}

if ! command -v tmux > /dev/null 2>&1; then
    echo "$E2E_NAME: tmux is not installed" >&2
    exit 1
fi
[ -x "$RINGSIDE" ] || { echo "$E2E_NAME: $RINGSIDE is not executable" >&2; exit 1; }

unset TMUX
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
cleanup() { tm kill-server > /dev/null 2>&1; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

capture() { SCREEN=$(tm capture-pane -p -t "$SESSION" 2> /dev/null) || SCREEN=""; }

# next_server: end this tmux server and use a new one for the next case (a server started on
# the socket of one that is still exiting can die with "server exited unexpectedly")
E2E_SERVERS=0
next_server() {
    tm kill-server > /dev/null 2>&1
    E2E_SERVERS=$((E2E_SERVERS + 1))
    SOCK="rs-e2e-$$-$E2E_SERVERS"
}

fail() {
    echo "$E2E_NAME${VARIANT:+ [$VARIANT]}: FAILED at step: $STEP" >&2
    [ $# -gt 0 ] && echo "  $*" >&2
    echo "---- last screen ----" >&2
    printf '%s\n' "$SCREEN" >&2
    echo "---------------------" >&2
    if [ -n "$OUT" ] && [ -f "$OUT/session.log" ]; then
        echo "---- session.log (tail) ----" >&2
        tail -n 20 "$OUT/session.log" >&2
    fi
    exit 1
}

# wait_for STEP SECONDS PREDICATE [ARGS...]: poll the screen every 0.2 s until PREDICATE (run
# with $SCREEN set) succeeds, or fail after SECONDS.
wait_for() {
    STEP=$1
    local limit=$2 start
    shift 2
    start=$(date +%s%N)
    while :; do
        capture
        "$@" && return 0
        if [ $((($(date +%s%N) - start) / 1000000)) -ge $((limit * 1000)) ]; then
            fail "no match within ${limit}s"
        fi
        sleep 0.2
    done
}

has() { printf '%s\n' "$SCREEN" | grep -qF -- "$1"; }
header_has() { printf '%s\n' "$SCREEN" | head -n 3 | grep -qF -- "$1"; }
file_exists() { [ -e "$1" ]; }
session_gone() { ! tm has-session -t "$SESSION" > /dev/null 2>&1; }
