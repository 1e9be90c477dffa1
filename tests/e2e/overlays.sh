#!/usr/bin/env bash
# End-to-end test of the overlays at 80x24, where none of them fits whole: the help (?) scrolls
# to its last line (End, PgDn) with its position in the frame, and the panels' help texts wrap
# so that the last one reads whole; the GPU overlay's providers page (g, Tab) wraps a long
# no-GPU reason; an injected kernel-log failure's details (k) wrap their fields and what helps,
# and scroll to the end. Every text is read back by the line numbers the frame's mark gives,
# page by page, and compared whole (the spaces where lines broke aside).
#
# usage: overlays.sh RINGSIDE SCRATCH_DIR
E2E_NAME="overlays e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
export LC_ALL=C.UTF-8 # the frame's line characters, and sed reading them as characters

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
OUT=$SCRATCH/out
# a machine without a GPU, under a long root (with spaces), so the reasons take two lines
ROOT="$SCRATCH/a machine without any graphics card at all"
mkdir -p "$ROOT/sys" "$ROOT/dev" || exit 1
TELE=(--telemetry "sysfs,libdrm" --sysfs-root "$ROOT/sys" --dev-root "$ROOT/dev")

# one ring timeout, and what helps with it in words long enough to wrap several times
echo "[ 10.000001] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236" \
    > "$SCRATCH/kmsg.log"
echo "[ 10.000002] amdgpu 0000:03:00.0: amdgpu:  Process information: process python3 pid 4242 thread python3 pid 4243" \
    >> "$SCRATCH/kmsg.log"
EXPLANATION="The overlay test's explanation: a sentence long enough that at eighty columns it \
has to wrap over several lines of the details, none of them cut at the frame. A second \
sentence makes the details longer than the screen at 80x24, so that they have to scroll."
LAST_ACTION="The last thing to try, also long: reach it with End and read every word of it, \
from the first to this one at the very end."
cat > "$SCRATCH/rules.json" << EOF
{"version": 1, "rules": [{"category": "ring_timeout", "match": ["ring gfx"],
  "title": "overlay test rule", "explanation": "$EXPLANATION",
  "actions": ["A first thing to try.", "A second one.", "A third one, a little longer than \
the others, so that it too continues under its dash.", "$LAST_ACTION"]}]}
EOF

# The rows inside the overlay's frame (its margins cut), top to bottom, the hint included.
box_lines() { printf '%s\n' "$SCREEN" | sed -n 's/^[^│]*│ \(.*\) │[^│]*$/\1/p'; }
# The frame's position mark: "FIRST-LAST/TOTAL more ...", or "" when every line is in view.
mark() { printf '%s\n' "$SCREEN" | grep -oE '[0-9]+-[0-9]+/[0-9]+ more [a-z ]*[a-z]' | head -n 1; }
# shellcheck disable=SC2053 # $1 is a pattern
mark_is() { [[ "$(mark)" == $1 ]]; }
# s without its spaces and line breaks: wrapped text compares equal to the text it came from.
flat() { printf '%s' "$1" | tr -d ' \n'; }
text_has() { [[ "$(flat "$TEXT")" == *"$(flat "$1")"* ]]; }

# read_all WHAT: every line of the open overlay into TEXT, placed by the line numbers of the
# mark, paging from Home with PgDn to the last line (all of its rows when it has no mark).
read_all() {
    local -a all=()
    local first last total k
    tm send-keys -t "$SESSION" Home
    # shellcheck disable=SC2016 # expanded by eval, at each look
    wait_for "$1: Home shows the first line" 10 eval 'mark_is "1-*" || [ -z "$(mark)" ]'
    if [ -z "$(mark)" ]; then
        TEXT=$(box_lines)
        STEP="$1: read back"
        return
    fi
    while :; do
        IFS='-/ ' read -r first last total _ <<< "$(mark)"
        mapfile -t rows < <(box_lines | head -n $((last - first + 1)))
        for k in "${!rows[@]}"; do all[first - 1 + k]=${rows[k]}; done
        [ "$last" -eq "$total" ] && break
        tm send-keys -t "$SESSION" NPage
        # shellcheck disable=SC2016 # expanded by eval, at each look
        wait_for "$1: PgDn pages on from line $first" 10 eval '! mark_is "$first-*"'
    done
    STEP="$1: read back"
    [ "${#all[@]}" -eq "$total" ] || fail "read ${#all[@]} of $total lines"
    TEXT=$(printf '%s\n' "${all[@]}")
}

STEP="the reasons the providers give"
"$RINGSIDE" probe --once "${TELE[@]}" > "$SCRATCH/probe.txt" 2>&1
SYSFS_WHY=$(sed -n 's/^  sysfs *unavailable  //p' "$SCRATCH/probe.txt")
LIBDRM_WHY=$(sed -n 's/^  libdrm *unavailable  //p' "$SCRATCH/probe.txt")
if [ -z "$SYSFS_WHY" ] || [ -z "$LIBDRM_WHY" ]; then
    fail "probe: $(cat "$SCRATCH/probe.txt")"
fi
[ ${#LIBDRM_WHY} -gt 72 ] || fail "the libdrm reason is too short to need wrapping: $LIBDRM_WHY"

STEP="start at 80x24"
tm new-session -d -s "$SESSION" -x 80 -y 24 "$RINGSIDE" --backend cpu --synthetic-days 5 \
    --epochs 100000 --output "$OUT" "${TELE[@]}" --no-kmsg --inject "kmsg:$SCRATCH/kmsg.log" \
    --kmsg-rules "$SCRATCH/rules.json" || fail "tmux new-session failed"
wait_for "the dashboard is up" 30 has "RUNNING"

tm send-keys -t "$SESSION" '?'
wait_for "'?': the help, cut at 80x24, says there is more below" 10 mark_is "1-*/* more below"
has "ringside help" || fail "no help title"
has "any other key closes" || fail "the help says nothing on how to close it"
tm send-keys -t "$SESSION" End
wait_for "End: the help's last line at the bottom" 10 mark_is "*more above"
IFS='-/ ' read -r _ last total _ <<< "$(mark)"
[ "$last" -eq "$total" ] || fail "End stops at line $last of $total"
TEXT=$(box_lines)
EVENTS_HELP="events commands, kernel failures, alerts, log; Enter: details (k: latest kernel)"
LOSS_TAIL="(the best model is kept as NAME_best.rsmodel)"
text_has "$LOSS_TAIL" || fail "the last panel's help is not whole after End"
read_all "the help"
text_has "$EVENTS_HELP" || fail "the events panel's help is not whole: $TEXT"
TIMELINE_TAIL="kernel: driver failures (T timeout M MES R reset P fault S sq_intr K KFD X Xid ! fatal D other driver failure)"
text_has "$TIMELINE_TAIL" || fail "the timeline's long help is cut"
text_has "? h this help: Up/Down PgUp/PgDn Home/End scroll it, any other key closes it" ||
    fail "the help's own line is missing"
tm send-keys -t "$SESSION" Escape
wait_for "Esc closes the help" 10 eval '! has "ringside help"'

tm send-keys -t "$SESSION" g Tab Tab
wait_for "g, Tab, Tab: the providers page" 10 has "[ providers ]"
read_all "the providers page"
text_has "libdrm unavailable" || fail "no libdrm row"
text_has "$SYSFS_WHY" || fail "the sysfs reason is not whole: $TEXT"
text_has "$LIBDRM_WHY" || fail "the libdrm reason is not whole: $TEXT"
tm send-keys -t "$SESSION" Escape
wait_for "Esc closes the GPU overlay" 10 eval '! has "[ providers ]"'

# k until the injected failure has come (before it, k says there is none)
k_opens() { mark_is "1-*/* more below" || { tm send-keys -t "$SESSION" k && false; }; }
wait_for "k: the ring timeout's details, more below" 20 k_opens
has "event detail" || fail "no details title"
has "Enter/Esc close" || fail "the details say nothing on how to close them"
tm send-keys -t "$SESSION" End
wait_for "End: the details' last line at the bottom" 10 mark_is "*more above"
TEXT=$(box_lines)
text_has "- $LAST_ACTION" || fail "the last action is not whole after End"
read_all "the details"
text_has "ring timeout: ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236" ||
    fail "the event's line is not whole: $TEXT"
text_has "fences: signaled 1234, emitted 1236" || fail "the fields are missing"
text_has "What helps: overlay test rule $EXPLANATION" || fail "the explanation is not whole"
tm send-keys -t "$SESSION" Escape
wait_for "Esc closes the details" 10 eval '! has "event detail"'
tm send-keys -t "$SESSION" Enter
wait_for "Enter on the failure k selected: its details again, from the top" 10 \
    eval 'has "event detail" && mark_is "1-*/* more below"'
tm send-keys -t "$SESSION" Enter
wait_for "Enter closes them" 10 eval '! has "event detail"'

tm send-keys -t "$SESSION" q q
wait_for "q q ends the run" 60 session_gone
echo "overlays e2e: ok ($((SECONDS - t0)) s)"
