#!/usr/bin/env bash
# End-to-end test of the timeline's present and its compact row, in a private tmux server:
# - a synchronize hung in the pre-training cleanup (--inject hang:cleanup:40, --sync-timeout 5)
#   is drawn live at 80x24, 120x40 and 200x60: the cleanup up to now, and the wait row labelled
#   HANG with the call up to now;
# - a pause (p) is a paused bar up to now while it lasts, in the full form (120x40) and the
#   compact one (80x24), before it is resumed;
# - at 80x24 the compact row's letters, frozen (f), have the phases' shares of the time the
#   recording (--record) gives for the same 5 s, within 10 points for each phase above 10%.
# The panel's rows are read with timeline_check.py, which takes the letters from the phase
# table; every wait polls the screen against a deadline.
#
# usage: timeline.sh RINGSIDE SCRATCH_DIR
E2E_NAME="timeline e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

CHECK="$(cd "$(dirname "$0")" && pwd)/timeline_check.py"
command -v python3 > /dev/null 2>&1 || { echo "$E2E_NAME: python3 is not installed" >&2; exit 1; }

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1

start() { # name, columns, rows, extra flags...
    local d=$SCRATCH/$1 w=$2 h=$3
    shift 3
    mkdir -p "$d"
    OUT=$d/out
    DIR=$d
    tm new-session -d -s "$SESSION" -x "$w" -y "$h" sh -c "'$RINGSIDE' --backend cpu \
        --synthetic-days 5 --epochs 100000 --telemetry none --no-kmsg --output '$OUT' $*; \
        echo \$? > '$d/rc'; sleep 30" || fail "tmux new-session failed"
}
rc_is() { [ -s "$DIR/rc" ] && [ "$(cat "$DIR/rc")" = "$1" ]; }
size_is() { [ "$(tm display -p -t "$SESSION" '#{pane_width}x#{pane_height}')" = "$1" ]; }
resize() { # WxH
    STEP="resize to $1"
    tm resize-window -t "$SESSION" -x "${1%x*}" -y "${1#*x}" || fail "resize-window failed"
}
# live LABEL PHASE: a timeline row labelled LABEL has PHASE up to now
live() { printf '%s\n' "$SCREEN" | python3 "$CHECK" live "$1" "$2"; }
rows() { printf '%s\n' "$SCREEN" | python3 "$CHECK" rows; }
# the compact form's device row, or the full form's row of the phase
phase_live() { live dev0 "$1" || live "$1" "$1"; }
training() { header_has "RUNNING" && printf '%s\n' "$SCREEN" | head -n 2 | grep -qE 'step [1-9]'; }
clock_s() {
    local c
    c=$(printf '%s\n' "$SCREEN" | head -n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | tail -n 1)
    [ -n "$c" ] && echo $((10#${c:0:2} * 3600 + 10#${c:3:2} * 60 + 10#${c:6:2}))
}

# ---- a hung call, live, at three sizes ----
start hang 80 24 --inject hang:cleanup:40 --sync-timeout 5
# ... and the synchronize panel's in-flight row, whole, whatever the rows left to it
inflight_hang() { has "in flight: device sync in cleanup for" && has "[HANG]"; }
hang_live() { size_is "$1" && live HANG sync && phase_live cleanup && inflight_hang; }
for size in 80x24 120x40 200x60; do
    [ "$size" = 80x24 ] || resize "$size"
    wait_for "$size: the hung cleanup and its call drawn up to now, the wait row HANG" 20 \
        hang_live "$size"
done
printf '%s\n' "---- the timeline at 200x60, the call hung ----" "$(rows)"
tm send-keys -t "$SESSION" q
tm send-keys -t "$SESSION" q
wait_for "q q leaves the hung run (status 3)" 10 rc_is 3
next_server

# ---- a pause, live, before it is resumed ----
start pause 120 40
wait_for "training runs" 30 training
tm send-keys -t "$SESSION" p
paused_full() { header_has "PAUSED" && live paused paused; }
wait_for "p: the full form's paused row reaches now while paused" 10 paused_full
resize 80x24
paused_compact() { size_is 80x24 && header_has "PAUSED" && live dev0 paused && has "now  paused"; }
wait_for "80x24: the device row is paused up to now while paused" 10 paused_compact
tm send-keys -t "$SESSION" p
wait_for "p again resumes" 10 header_has "RUNNING"
tm send-keys -t "$SESSION" q
wait_for "q ends the run" 60 rc_is 0
next_server

# ---- the compact row's shares against the recording ----
start shares 80 24 --record "$SCRATCH/shares/run.jsonl"
wait_for "training runs" 30 training
tm send-keys -t "$SESSION" '<'
wait_for "'<': the span is 5 s" 10 has "last 5 s"
started=$(clock_s)
full() { training && [ "$(clock_s)" -ge $((started + 6)) ]; }
wait_for "6 s of training on the 5 s span" 20 full
tm send-keys -t "$SESSION" f
wait_for "f: the display is frozen" 10 has "display frozen"
step=$(printf '%s\n' "$SCREEN" | head -n 2 | grep -oE 'step [0-9]+' | head -n 1 | cut -d' ' -f2)
row=$(rows | grep '^ dev0' | cut -c13-)
if [ -z "$step" ] || [ -z "$row" ]; then
    fail "no step ($step) or no dev0 row in the frozen frame"
fi
tm send-keys -t "$SESSION" f
tm send-keys -t "$SESSION" q
wait_for "q ends the run" 60 rc_is 0
STEP="the frozen row's letters against the recording's 5 s up to step $step"
echo "dev0 |$row|"
python3 "$CHECK" shares "$SCRATCH/shares/run.jsonl" "$step" 5 "$row" ||
    fail "the compact row's shares are not the recorded phases' shares"
echo "timeline e2e: ok ($((SECONDS - t0)) s)"
