#!/usr/bin/env bash
# End-to-end test of data-parallel training on several devices (simulated devices of the CPU
# backend, or the GPUs E2E_BACKEND=hip and E2E_DEVICES name). Headless: two devices train,
# every event names its device, collectives come as their own events, one checkpoint a
# epoch; a device that leaves fails the run within the collective timeout, naming it. In the
# dashboard (tmux) with 2 devices: one device hangs in a training step while the other waits
# in the all-reduce: HUNG, an alert naming both, the screen stays live, q q leaves within 2 s
# with the terminal as it was. With 4 devices: teardown never ends on one; the others are
# aborted after the teardown timeout and the process exits (or, where the library's finalize
# does not wait for the peers, they leave at once); q q during it leaves too (four simulated
# devices unless E2E_BACKEND4 names a backend with four).
#
# usage: multi.sh RINGSIDE SCRATCH_DIR
E2E_NAME="multi-device e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

t0=$SECONDS
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" || exit 1
backend=${E2E_BACKEND:-cpu}
two=${E2E_DEVICES:-0,1}

# ---- headless ----
STEP="headless: two devices train"
h=$SCRATCH/headless
"$RINGSIDE" train --headless --backend "$backend" --devices "$two" --synthetic-days 8 \
    --epochs 2 --no-kmsg --telemetry none --output "$h" > "$h.jsonl" 2> "$h.err" ||
    fail "status $?: $(cat "$h.err")"
first=${two%%,*} second=${two##*,}
for d in "$first" "$second"; do
    grep -q "\"type\":\"phase\",\"seq\":[0-9]*,\"dev\":$d,\"phase\":\"allreduce\"" "$h.jsonl" ||
        fail "no allreduce phase on dev $d"
    grep -q "\"type\":\"collective\",\"seq\":[0-9]*,\"dev\":$d,.*\"op\":\"init\"" "$h.jsonl" ||
        fail "no init collective on dev $d"
    grep -q "\"type\":\"collective\",\"seq\":[0-9]*,\"dev\":$d,.*\"op\":\"destroy\"" "$h.jsonl" ||
        fail "no destroy collective on dev $d"
done
[ "$(grep -c 'checkpoint written' "$h.jsonl")" = 2 ] || fail "not one checkpoint an epoch"
grep -q '"type":"summary","state":"completed"' "$h.jsonl" || fail "no completed summary"
grep -q "\"device_list\":\[$first,$second\]" "$h.jsonl" || fail "the run line lacks the devices"

STEP="headless: a device leaves mid-epoch"
s=$SECONDS
"$RINGSIDE" train --headless --backend "$backend" --devices "$two" --synthetic-days 8 \
    --epochs 2 --no-kmsg --telemetry none --output "$h-drop" --inject "drop:dev$second" \
    --comm-timeout 3 > "$h-drop.jsonl" 2> "$h-drop.err"
rc=$?
[ "$rc" = 1 ] || fail "status $rc, not 1: $(cat "$h-drop.err")"
grep -q "training failed: dev $second: left the run" "$h-drop.err" ||
    fail "the failure does not name the device: $(tail -3 "$h-drop.err")"
[ $((SECONDS - s)) -lt 30 ] || fail "the others waited $((SECONDS - s)) s"

# ---- the dashboard ----
start() { # name, devices, extra flags...
    local d=$SCRATCH/$1 devs=$2
    shift 2
    local be=$backend
    [ "$devs" = 0-3 ] && be=${E2E_BACKEND4:-cpu} # four devices: simulated unless told
    mkdir -p "$d"
    OUT=$d/out
    DIR=$d
    tm new-session -d -s "$SESSION" -x 160 -y 48 sh -c "stty -a > '$d/before'; \
        '$RINGSIDE' --backend $be --devices $devs --synthetic-days 8 --telemetry none \
            --no-kmsg --output '$OUT' $* < /dev/tty; rc=\$?; \
        stty -a > '$d/after'; echo \$rc > '$d/rc'; sleep 30" || fail "tmux new-session failed"
}
rc_is() { [ -s "$DIR/rc" ] && [ "$(cat "$DIR/rc")" = "$1" ]; }
rc_set() { [ -s "$DIR/rc" ]; }
clock() { printf '%s\n' "$SCREEN" | head -n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | tail -n 1; }

start hang "$two" --epochs 100000 --inject "hang:forward:120:dev$second" --sync-slow 1 \
    --sync-timeout 3
both() { header_has "HUNG" && has "HANG; dev $second has not entered it"; }
wait_for "dev $second hangs in a step, dev $first waits in the all-reduce: both named" 40 both
bundle() { grep -qs "dev $second has not entered it" "$OUT"/hang-*.json; }
wait_for "the hang bundle says which device the other waits for" 5 bundle
c1=$(clock)
clock_moves() { [ "$(clock)" != "$c1" ]; }
wait_for "the screen stays live" 5 clock_moves
tm send-keys -t "$SESSION" q
sleep 0.3
s=$(date +%s%N)
tm send-keys -t "$SESSION" q
wait_for "q q leaves within 2 s" 2 rc_set
ms=$((($(date +%s%N) - s) / 1000000))
rc_is 3 || fail "status $(cat "$DIR/rc"), not 3"
cmp -s "$DIR/before" "$DIR/after" || fail "the terminal settings changed: $(diff "$DIR/before" "$DIR/after")"
echo "multi-device e2e: q q left in $ms ms"
next_server

start teardown 0-3 --epochs 1 --inject "hang:teardown:120:dev3" --teardown-timeout 4 \
    --sync-slow 1 --sync-timeout 2
waits() { has "waits in destroy" && has "dev 3 has not entered it"; }
# a library whose finalize does not wait for the peers (NCCL 2.28's) lets the others leave
alone() { has "left the group in" && has "dev 3 holds back from teardown" && ! waits; }
waits_or_alone() { waits || alone; }
wait_for "4 devices: dev 3 never leaves the group; the others wait in destroy (or leave, where the library lets a rank leave alone)" 60 waits_or_alone
c1=$(clock)
wait_for "the screen stays live during the teardown hang" 5 clock_moves
if waits; then
    aborted() { has "leaving the group did not finish in 4.0 s" || rc_set; }
    wait_for "after the teardown timeout the group is aborted" 15 aborted
else
    echo "multi-device e2e: the library let devices 0-2 leave without dev 3"
fi
tm send-keys -t "$SESSION" q
sleep 0.3
tm send-keys -t "$SESSION" q
wait_for "q q leaves within 2 s" 2 rc_set
cmp -s "$DIR/before" "$DIR/after" || fail "the terminal settings changed: $(diff "$DIR/before" "$DIR/after")"
echo "multi-device e2e: ok ($((SECONDS - t0)) s)"
