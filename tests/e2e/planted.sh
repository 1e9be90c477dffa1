#!/usr/bin/env bash
# End-to-end test of what is planted where the dashboard writes, in an output directory anyone
# can write (mode 1777, like /tmp): a FIFO as session.log (nobody reads it: a writer's open
# used to wait there for good, after the run had started) and a link there are refused before
# anything starts, one line on the terminal naming the path and what is there, exit 2, and left
# as they are; a link planted as --record FILE is replaced by the recording, its target never
# written; the session log the dashboard makes is 0600.
#
# usage: planted.sh RINGSIDE SCRATCH_DIR
E2E_NAME="planted e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH/shared" || exit 1
chmod 1777 "$SCRATCH/shared" || exit 1
printf 'precious' > "$SCRATCH/victim" || exit 1

# pane ARGS...: the dashboard in a 120x40 pane; its status into $SCRATCH/rc, the screen kept
pane() {
    rm -f "$SCRATCH/rc"
    tm new-session -d -s "$SESSION" -x 120 -y 40 sh -c "$*; echo \$? > '$SCRATCH/rc'; sleep 30" ||
        fail "tmux new-session failed"
}
rc_is() { [ -s "$SCRATCH/rc" ] && [ "$(cat "$SCRATCH/rc")" = "$1" ]; }
quick="--backend cpu --synthetic-days 3 --epochs 1 --telemetry none --no-kmsg --frames 3 -d 1"
log="$SCRATCH/shared/session.log"

# refused KIND SAID: the dashboard over the shared directory with KIND planted as its session
# log: exit 2 (the bound is a failure bound: a refusal comes at once), SAID once, no checkpoint
refused() {
    pane "'$RINGSIDE' $quick --output '$SCRATCH/shared'"
    wait_for "$1 as session.log: exit 2" 30 rc_is 2
    SCREEN=$(tm capture-pane -p -J -t "$SESSION") # a long path wraps: its lines joined
    lines=$(printf '%s\n' "$SCREEN" | grep -cF "$log: $2")
    [ "$lines" = 1 ] || fail "want '$log: $2' once on the terminal, got $lines"
    [ ! -e "$SCRATCH/shared/vpoc_mlp.rsmodel" ] || fail "the run went on (a checkpoint exists)"
    next_server
}

STEP="a FIFO as session.log"
mkfifo "$log" || fail "mkfifo"
refused "a FIFO" "a FIFO is there, not a regular file: left as it is"
[ -p "$log" ] || fail "the FIFO is not there as it was"
rm -f "$log"

STEP="a link as session.log"
ln -s "$SCRATCH/victim" "$log" || fail "ln"
refused "a link" "a symbolic link is there (not followed): left as it is"
[ -L "$log" ] || fail "the link is not there as it was"
[ "$(cat "$SCRATCH/victim")" = precious ] || fail "the link's target was written"
rm -f "$log"

STEP="a link as --record FILE"
rec="$SCRATCH/shared/run.jsonl"
ln -s "$SCRATCH/victim" "$rec" || fail "ln"
pane "umask 022; '$RINGSIDE' $quick --output '$SCRATCH/shared' --record '$rec'"
wait_for "the run with --record over a link: exit 0" 60 rc_is 0
[ "$(cat "$SCRATCH/victim")" = precious ] || fail "the link's target was written"
{ [ -f "$rec" ] && [ ! -L "$rec" ]; } || fail "the link is still there"
head -c 14 "$rec" | grep -qF '{"type":"run"' || fail "not a recording: $(head -c 80 "$rec")"
mode=$(stat -c %a "$log") || fail "no session log"
[ "$mode" = 600 ] || fail "the session log is $mode, not 600"
for f in "$SCRATCH/shared"/*.tmp.*; do
    [ -e "$f" ] && fail "a temp file left: $f"
done
echo "planted e2e: ok ($((SECONDS - t0)) s)"
