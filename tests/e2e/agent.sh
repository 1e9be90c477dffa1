#!/usr/bin/env bash
# End-to-end test of the agent: started on a free loopback port with the CPU backend and a
# token, scraped with curl and checked with promtool (or, where there is none, by the format's
# rules below), its /events read and followed, a dashboard attached in tmux with and without the
# token, a chunk-size change sent both ways, the kernel log counted, SIGTERM. Then the option
# errors, and an agent without --train or --allow-control; the limits (the UNIX socket's mode,
# follower places, requests of a bad form, token guesses held off); HTTPS with a pair made by
# openssl, read with curl and attached to.
#
# usage: agent.sh RINGSIDE SCRATCH_DIR    (E2E_BACKEND=hip: train on the GPU, default cpu)
E2E_NAME="agent e2e"
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

command -v curl > /dev/null 2>&1 || { echo "$E2E_NAME: curl is not installed" >&2; exit 1; }
command -v openssl > /dev/null 2>&1 || { echo "$E2E_NAME: openssl is not installed" >&2; exit 1; }
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PROMTOOL=$(command -v promtool 2> /dev/null || true)
[ -z "$PROMTOOL" ] && [ -x "$TOP/build-tools/bin/promtool" ] && PROMTOOL=$TOP/build-tools/bin/promtool

rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
OUT=$SCRATCH/out
TOKEN=$SCRATCH/token
printf 'e2e-%s-secret-of-this-run\n' "$$" > "$TOKEN"
chmod 600 "$TOKEN"
KLOG=$SCRATCH/kmsg.log
: > "$KLOG"
AGENT_PID=""
stop_agent() { [ -n "$AGENT_PID" ] && kill -9 "$AGENT_PID" 2> /dev/null; AGENT_PID=""; }
trap 'stop_agent; cleanup' EXIT

# start_agent LOG ARGS...: the agent in the background; URL and PORT from its "serving" line.
start_agent() {
    local log=$1
    shift
    "$RINGSIDE" agent --listen 127.0.0.1:0 "$@" 2> "$log" &
    AGENT_PID=$!
    wait_for "the agent says where it listens ($*)" 30 grep -qE "serving https?://127.0.0.1:" "$log"
    URL=$(sed -nE 's|.*serving (https?://127.0.0.1:[0-9]+).*|\1|p' "$log" | head -n 1)
    PORT=${URL##*:}
}

auth() { printf 'Authorization: Bearer %s' "$(cat "$TOKEN")"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
metrics() { curl -sf "$URL/metrics" > "$SCRATCH/metrics.txt"; }
metric_is() { metrics && grep -qE "^$1 $2\$" "$SCRATCH/metrics.txt"; }
events_now() { curl -sf -H "$(auth)" "$URL/events?since=0&follow=0" > "$SCRATCH/events.jsonl"; }
count_in() { grep -c -- "$2" "$1" || true; }

# The format's rules where promtool is missing: HELP and TYPE once and before the family's
# samples, valid names, numeric values, cumulative buckets ending in +Inf.
check_format() {
    awk '
    /^# HELP / { if (help[$3]++) { print "two HELP lines for " $3; bad = 1 } next }
    /^# TYPE / { if (type[$3]++) { print "two TYPE lines for " $3; bad = 1 }
                 if (seen[$3]) { print "TYPE after samples of " $3; bad = 1 }
                 kind[$3] = $4; next }
    /^#/ { next }
    /^$/ { next }
    {
        name = $1; sub(/\{.*/, "", name)
        if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad name: " $0; bad = 1 }
        fam = name; sub(/_(bucket|sum|count)$/, "", fam)
        if (!(fam in kind) && !(name in kind)) { print "no TYPE before: " $0; bad = 1 }
        seen[fam] = 1; seen[name] = 1
        v = $NF
        if (v !~ /^([-+]?[0-9.]+([eE][-+]?[0-9]+)?|NaN|[+-]Inf)$/) { print "bad value: " $0; bad = 1 }
        if (name ~ /_bucket$/) {
            series = $1; sub(/,?le="[^"]*"/, "", series)
            if (series in last && v + 0 < last[series]) { print "bucket goes down: " $0; bad = 1 }
            last[series] = v + 0
            if ($1 ~ /le="\+Inf"/) inf[series] = 1
        }
    }
    END { for (s in last) if (!(s in inf)) { print "no +Inf bucket: " s; bad = 1 } exit bad }
    ' "$1"
}

# ---- the agent with the training loop, a token and control ----
start_agent "$SCRATCH/agent.log" --train --backend "${E2E_BACKEND:-cpu}" --synthetic-days 20 --epochs 100000 \
    --output "$OUT" --token-file "$TOKEN" --allow-control --kmsg-file "$KLOG" \
    --metrics-interval 0.2

STEP="/metrics answers without the token, in the text format"
ctype=$(curl -s -o "$SCRATCH/metrics.txt" -w '%{http_code} %{content_type}' "$URL/metrics")
[ "$ctype" = "200 text/plain; version=0.0.4; charset=utf-8" ] || fail "got '$ctype'"
FAMILIES="ringside_pool_fragmentation_ratio ringside_watchdog_state ringside_train_loss
    ringside_phase_seconds_total ringside_driver_events_total ringside_agent_info"
# one scrape with steps, the sync histogram and every family (the loss comes after the first
# steps: a slow build can be scraped between the two)
all_families() {
    metric_is 'ringside_train_steps_total' '[1-9][0-9]*' &&
        grep -q '^ringside_sync_latency_seconds_bucket{.*le="+Inf"}' "$SCRATCH/metrics.txt" || return 1
    local name
    for name in $FAMILIES; do
        grep -q "^$name" "$SCRATCH/metrics.txt" || return 1
    done
}
wait_for "training steps, the sync histogram and every family show in /metrics" 60 all_families

STEP="the agent has loaded its server's libraries; training without the agent loads none of them"
for lib in libmicrohttpd libgnutls; do
    grep -q "/$lib" "/proc/$AGENT_PID/maps" || fail "$lib is not in the agent's memory map"
done
LD_DEBUG=files "$RINGSIDE" train --headless --backend cpu --synthetic-days 3 --epochs 1 \
    --output "$SCRATCH/plain" > /dev/null 2> "$SCRATCH/plain-ld.txt" || fail "train failed"
grep -q 'file=libjson-c' "$SCRATCH/plain-ld.txt" || fail "LD_DEBUG=files printed nothing to check"
if grep -E 'file=lib(microhttpd|gnutls|curl)' "$SCRATCH/plain-ld.txt"; then
    fail "a training run loaded the HTTP or TLS libraries"
fi
STEP="/metrics is valid exposition text"
if [ -n "$PROMTOOL" ]; then
    "$PROMTOOL" check metrics < "$SCRATCH/metrics.txt" > "$SCRATCH/promtool.txt" 2>&1 ||
        fail "promtool: $(cat "$SCRATCH/promtool.txt")"
    echo "$E2E_NAME: promtool check metrics: ok ($(wc -l < "$SCRATCH/metrics.txt") lines)"
else
    echo "$E2E_NAME: no promtool here; checking the format's rules with awk"
fi
check_format "$SCRATCH/metrics.txt" > "$SCRATCH/format.txt" || fail "$(cat "$SCRATCH/format.txt")"

STEP="OpenMetrics when asked for"
ctype=$(curl -s -H 'Accept: application/openmetrics-text; version=1.0.0' \
    -o "$SCRATCH/om.txt" -w '%{content_type}' "$URL/metrics")
[ "$ctype" = "application/openmetrics-text; version=1.0.0; charset=utf-8" ] || fail "got '$ctype'"
[ "$(tail -n 1 "$SCRATCH/om.txt")" = "# EOF" ] || fail "no '# EOF' at the end"
grep -q '^# TYPE ringside_train_steps counter$' "$SCRATCH/om.txt" ||
    fail "the counter family is not named without _total"

STEP="the kernel log's ring timeout is counted"
echo "amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1234, emitted seq=1236" \
    >> "$KLOG"
wait_for "$STEP" 30 metric_is 'ringside_driver_events_total\{category="ring_timeout"\}' 1

STEP="/events and /healthz need the token; /events starts with the run line"
[ "$(code "$URL/events?since=0&follow=0")" = 401 ] || fail "/events without the token"
[ "$(code -H 'Authorization: Bearer wrong' "$URL/healthz")" = 401 ] || fail "a wrong token"
[ "$(curl -s -H "$(auth)" "$URL/healthz")" = ok ] || fail "/healthz with the token"
events_now || fail "/events with the token"
head -n 1 "$SCRATCH/events.jsonl" | grep -q '"type":"run"' || fail "the first line is not the run"
grep -q '"type":"status"' "$SCRATCH/events.jsonl" || fail "no status line"
grep -q '"type":"kmsg"' "$SCRATCH/events.jsonl" || fail "no kernel-log event"

STEP="since=SEQ resumes after event SEQ"
last=$(grep -o '"seq":[0-9]*' "$SCRATCH/events.jsonl" | tail -n 1 | cut -d: -f2)
[ -n "$last" ] && [ "$last" -gt 10 ] || fail "event numbers: '$last'"
half=$((last - 50))
curl -sf -H "$(auth)" "$URL/events?since=$half&follow=0" > "$SCRATCH/resume.jsonl"
first=$(grep -o '"seq":[0-9]*' "$SCRATCH/resume.jsonl" | head -n 1 | cut -d: -f2)
[ "$first" = $((half + 1)) ] || fail "since=$half starts at event $first"

STEP="a follower gets new lines as they come"
: > "$SCRATCH/follow.jsonl"
curl -sN -H "$(auth)" "$URL/events?since=$last" > "$SCRATCH/follow.jsonl" &
FOLLOW=$!
wait_for "$STEP" 30 grep -q "\"seq\":$((last + 5))," "$SCRATCH/follow.jsonl"

STEP="/control: 401 without the token, 400 for a bad command"
[ "$(code -X POST "$URL/control?cmd=set_chunk&arg=125")" = 401 ] || fail "no token"
[ "$(code -X POST -H "$(auth)" "$URL/control?cmd=reboot")" = 400 ] || fail "bad command"
[ "$(code -H "$(auth)" "$URL/nothing")" = 404 ] || fail "unknown path"

# ---- attach, read-only: the loop's keys are greyed and send nothing ----
tm new-session -d -s "$SESSION" -x 140 -y 40 \
    sh -c "'$RINGSIDE' attach '$URL' 2>&1; echo \"attach exit=\$?\"; sleep 30" ||
    fail "tmux new-session failed"
wait_for "attach without the token: refused with the reason" 10 has "give the agent's token"
wait_for "attach without the token: exit status 2" 10 has "attach exit=2"
next_server
: > "$SCRATCH/empty"
tm new-session -d -s "$SESSION" -x 140 -y 40 \
    sh -c "'$RINGSIDE' attach '$URL' --token-file '$SCRATCH/empty' 2>&1; sleep 30" ||
    fail "tmux new-session failed"
wait_for "an empty token file is a clear error" 10 has "no token"
next_server
echo "not-the-token-of-this-agent" > "$SCRATCH/wrong"
chmod 600 "$SCRATCH/wrong"
tm new-session -d -s "$SESSION" -x 140 -y 40 \
    sh -c "'$RINGSIDE' attach '$URL' --token-file '$SCRATCH/wrong' 2>&1; sleep 30" ||
    fail "tmux new-session failed"
wait_for "a wrong token is a clear error" 10 has "401"
next_server

# ---- attach with the token: the dashboard of the remote run; '+' changes the chunk size ----
tm new-session -d -s "$SESSION" -x 140 -y 40 "$RINGSIDE" attach "$URL" --token-file "$TOKEN" ||
    fail "tmux new-session failed"
wait_for "the remote run shows: host, backend, epochs" 30 header_has "${E2E_BACKEND:-cpu}"
wait_for "the remote run is training" 60 header_has "epoch"
# the kernel-log event came minutes of epochs ago, below the newest events: it is counted in the
# events panel's title, and k opens it wherever the panel has scrolled to (Esc closes it, Home
# follows the newest again)
wait_for "the remote kernel-log event is counted" 30 has "kernel 1"
tm send-keys -t "$SESSION" k
wait_for "k shows the remote kernel-log event" 10 has "ring timeout"
tm send-keys -t "$SESSION" Escape
tm send-keys -t "$SESSION" Home
followed() { grep -q -- "$1" "$SCRATCH/follow.jsonl"; }
[ "$(count_in "$SCRATCH/follow.jsonl" '"cmd":"set_chunk"')" = 0 ] || fail "a chunk change already"
tm send-keys -t "$SESSION" +
wait_for "'+' reaches the agent's loop" 30 followed '"cmd":"set_chunk","arg":[0-9]*,"rc":0'
wait_for "the command's result shows in the attached dashboard" 30 has "set_chunk"
tm send-keys -t "$SESSION" q
wait_for "q leaves the attached dashboard" 10 session_gone
next_server
metric_is 'ringside_train_steps_total' '[1-9][0-9]*' || fail "the agent stopped training on detach"

STEP="the token's /control works"
reply=$(curl -s -X POST -H "$(auth)" "$URL/control?cmd=set_chunk&arg=250")
printf '%s' "$reply" | grep -q '"ok":true' || fail "reply: $reply"
wait_for "the chunk size 250 reaches the loop" 30 followed '"cmd":"set_chunk","arg":250,"rc":0'

STEP="SIGTERM stops the agent: the follower gets the summary, exit 0"
kill -TERM "$AGENT_PID"
wait_for "the agent exits" 90 sh -c "! kill -0 $AGENT_PID 2> /dev/null"
wait "$AGENT_PID"
rc=$?
AGENT_PID=""
[ "$rc" = 0 ] || fail "exit status $rc; log: $(tail -n 5 "$SCRATCH/agent.log")"
wait "$FOLLOW" || true
grep -q '"type":"summary"' "$SCRATCH/follow.jsonl" || fail "the follower got no summary"
n=$(count_in "$SCRATCH/follow.jsonl" '"cmd":"set_chunk"')
[ "$n" = 2 ] || fail "$n chunk-size commands reached the loop; 2 were sent with the token"
grep -q "stopped" "$SCRATCH/agent.log" || fail "no stop message in the log"
[ "$(code "$URL/metrics")" = 000 ] || fail "the port still answers"

# ---- training without --allow-control: attach is read-only, /control is refused ----
start_agent "$SCRATCH/agent2.log" --train --backend "${E2E_BACKEND:-cpu}" --synthetic-days 20 --epochs 100000 \
    --output "$OUT-2" --token-file "$TOKEN" --no-kmsg --telemetry none
STEP="without --allow-control, /control is off even with the token"
[ "$(code -X POST -H "$(auth)" "$URL/control?cmd=pause")" = 403 ] || fail "control not refused"
curl -sN -H "$(auth)" "$URL/events?since=0" > "$SCRATCH/follow2.jsonl" &
FOLLOW=$!
tm new-session -d -s "$SESSION" -x 140 -y 40 \
    sh -c "'$RINGSIDE' attach '$URL' --token-file '$TOKEN' 2> '$SCRATCH/attach2.err'" ||
    fail "tmux new-session failed"
wait_for "the read-only attach says why its keys are grey" 30 has "read-only"
wait_for "the remote run is training" 60 header_has "epoch"
tm send-keys -t "$SESSION" +
wait_for "'+' answers that the dashboard is read-only" 10 has "read-only"
tm send-keys -t "$SESSION" q
wait_for "q leaves" 10 session_gone
next_server
kill -INT "$AGENT_PID"
wait "$AGENT_PID"
rc=$?
AGENT_PID=""
[ "$rc" = 0 ] || fail "SIGINT: exit status $rc"
wait "$FOLLOW" || true
grep -q '"type":"summary"' "$SCRATCH/follow2.jsonl" || fail "the follower got no summary"
grep -q '"cmd":"set_chunk"' "$SCRATCH/follow2.jsonl" && fail "a read-only '+' reached the loop"

# ---- option errors: one line, exit status 2 ----
expect_usage() { # STEP, ARGS...
    STEP=$1
    shift
    "$RINGSIDE" agent "$@" > "$SCRATCH/out.txt" 2> "$SCRATCH/err.txt"
    local rc=$?
    [ "$rc" = 2 ] || fail "exit status $rc: $(cat "$SCRATCH/err.txt")"
    grep -q "^ringside\( agent\)\?: " "$SCRATCH/err.txt" || fail "no message: $(cat "$SCRATCH/err.txt")"
    [ "$(wc -l < "$SCRATCH/err.txt")" -eq 1 ] || fail "not one line: $(cat "$SCRATCH/err.txt")"
    [ ! -s "$SCRATCH/out.txt" ] || fail "stdout not empty: $(cat "$SCRATCH/out.txt")"
}
expect_usage "--allow-control without a token" --train --allow-control
expect_usage "a bad --listen" --listen nowhere
expect_usage "a missing token file" --token-file "$SCRATCH/none"
printf 'short\n' > "$SCRATCH/short"
chmod 600 "$SCRATCH/short"
expect_usage "a token too short to be secret" --token-file "$SCRATCH/short"
grep -q "too easy to guess" "$SCRATCH/err.txt" || fail "$(cat "$SCRATCH/err.txt")"
mkfifo "$SCRATCH/fifo"
expect_usage "a FIFO as the token file (refused, not waited on)" --token-file "$SCRATCH/fifo"
grep -q "not a regular file" "$SCRATCH/err.txt" || fail "$(cat "$SCRATCH/err.txt")"
expect_usage "a dashboard option" --frames 3
start_agent "$SCRATCH/agent3.log" --telemetry none --no-kmsg
STEP="telemetry only (no --train, no token): /metrics and /events, no training metrics"
metrics || fail "/metrics"
grep -q '^ringside_agent_info{' "$SCRATCH/metrics.txt" || fail "no agent info"
grep -q '^ringside_train_steps_total' "$SCRATCH/metrics.txt" && fail "train metrics without --train"
curl -sf "$URL/events?follow=0" | head -n 1 | grep -q '"backend":"none"' || fail "the run line"
expect_usage "a port in use" --listen "127.0.0.1:$PORT" --telemetry none --no-kmsg
grep -qi "in use" "$SCRATCH/err.txt" || fail "$(cat "$SCRATCH/err.txt")"
stop_agent
STEP="beyond loopback without a token: said at the start"
"$RINGSIDE" agent --listen 0.0.0.0:0 --telemetry none --no-kmsg 2> "$SCRATCH/agent4.log" &
AGENT_PID=$!
wait_for "the warning" 20 grep -q "beyond this machine without a token" "$SCRATCH/agent4.log"
stop_agent
STEP="beyond loopback with a token in plain HTTP: said at the start"
"$RINGSIDE" agent --listen 0.0.0.0:0 --token-file "$TOKEN" --telemetry none --no-kmsg \
    2> "$SCRATCH/agent5.log" &
AGENT_PID=$!
wait_for "the warning" 20 grep -q "the token crosses the network in clear" "$SCRATCH/agent5.log"
stop_agent

# ---- the limits: the UNIX socket's mode, follower places, bad forms, token guesses ----
start_agent "$SCRATCH/agent7.log" --telemetry none --no-kmsg --token-file "$TOKEN" \
    --unix "$SCRATCH/agent.sock" --max-followers 2
STEP="the UNIX socket is 0660 as soon as the agent serves, and nothing is left beside it"
[ "$(stat -c %a "$SCRATCH/agent.sock")" = 660 ] || fail "mode $(stat -c %a "$SCRATCH/agent.sock")"
find "$SCRATCH" -maxdepth 1 -name '.rs-*' | grep -q . && fail "a private directory is left"
STEP="--max-followers 2: a third follower is answered 503 with Retry-After, /healthz still 200"
# one over the UNIX socket (no address: counted in the total only), one over TCP, so the third
# finds every place taken rather than its address's share (429)
curl -sN --unix-socket "$SCRATCH/agent.sock" -H "$(auth)" http://agent/events > "$SCRATCH/f1.jsonl" &
F1=$!
curl -sN -H "$(auth)" "$URL/events" > "$SCRATCH/f2.jsonl" &
F2=$!
wait_for "two followers" 20 sh -c "grep -q '\"type\":\"run\"' '$SCRATCH/f1.jsonl' &&
    grep -q '\"type\":\"run\"' '$SCRATCH/f2.jsonl'"
STEP="--max-followers 2: a third follower is answered 503 with Retry-After, /healthz still 200"
head3=$(curl -s -D - -o /dev/null -H "$(auth)" "$URL/events")
printf '%s' "$head3" | grep -q '^HTTP/1.1 503' || fail "$head3"
printf '%s' "$head3" | grep -qi '^Retry-After: 10' || fail "no Retry-After: $head3"
[ "$(curl -s -H "$(auth)" "$URL/healthz")" = ok ] || fail "/healthz beside the followers"
grep -q "refused an /events follower from 127.0.0.1 (503)" "$SCRATCH/agent7.log" ||
    fail "no line: $(cat "$SCRATCH/agent7.log")"
kill "$F1" "$F2" 2> /dev/null
wait "$F1" "$F2" 2> /dev/null
STEP="requests of a bad form get their status"
[ "$(code "$URL/metrics%00.txt")" = 400 ] || fail "a path with %00"
[ "$(code -H 'Host: 127.0.0.1:80@evil.example' "$URL/metrics")" = 400 ] || fail "userinfo in Host"
query=$(printf 'a=1&%.0s' $(seq 1000))
[ "$(code "$URL/metrics?$query")" = 414 ] || fail "a query of 1000 arguments"
exec 3<> "/dev/tcp/127.0.0.1/$PORT"
printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n' >&3
line=$(head -n 1 <&3)
exec 3<&-
case $line in "HTTP/1.1 400 "*) ;; *) fail "two Host headers: $line" ;; esac
STEP="10 wrong tokens are answered 401, the next request 429 with Retry-After; one line logged"
for k in $(seq 1 10); do
    [ "$(code -H "Authorization: Bearer wrong-$k" "$URL/healthz")" = 401 ] || fail "guess $k"
done
head11=$(curl -s -D - -o /dev/null -H "$(auth)" "$URL/healthz")
printf '%s' "$head11" | grep -q '^HTTP/1.1 429' || fail "$head11"
printf '%s' "$head11" | grep -qi '^Retry-After: [0-9]' || fail "no Retry-After: $head11"
[ "$(count_in "$SCRATCH/agent7.log" "wrong token from 127.0.0.1 (401)")" = 1 ] ||
    fail "$(cat "$SCRATCH/agent7.log")"
[ "$(code "$URL/metrics")" = 200 ] || fail "/metrics is held off"
[ "$(curl -s --unix-socket "$SCRATCH/agent.sock" -H "$(auth)" http://agent/healthz)" = ok ] ||
    fail "the UNIX socket is held off too"
closed_is() { metric_is "ringside_agent_http_connections_closed_total\\{reason=\"$1\"\\}" "$2"; }
for reason in auth_backoff over_follower_limit; do # (the text is rebuilt every second)
    wait_for "$reason counted once" 10 closed_is "$reason" 1
done
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
AGENT_PID=""
grep -q "wrong tokens since the last such line: 9$" "$SCRATCH/agent7.log" ||
    fail "no count at the stop: $(tail -n 3 "$SCRATCH/agent7.log")"

# ---- HTTPS: a self-signed pair made here, which curl and attach trust only when given it ----
STEP="a certificate and key made with openssl"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$SCRATCH/key.pem" -out "$SCRATCH/ca.pem" \
    > "$SCRATCH/openssl.txt" 2>&1 || fail "$(cat "$SCRATCH/openssl.txt")"
start_agent "$SCRATCH/agent6.log" --telemetry none --no-kmsg --token-file "$TOKEN" \
    --tls-cert "$SCRATCH/ca.pem" --tls-key "$SCRATCH/key.pem"
STEP="the agent says https"
case $URL in https://*) ;; *) fail "serving $URL" ;; esac
STEP="/healthz over HTTPS with --cacert"
[ "$(curl -s --cacert "$SCRATCH/ca.pem" -H "$(auth)" "$URL/healthz")" = ok ] || fail "no ok"
STEP="without --cacert curl refuses the certificate"
curl -s -o /dev/null -H "$(auth)" "$URL/healthz"
rc=$?
[ "$rc" = 60 ] || fail "curl exit status $rc (60: the peer's certificate not verified)"
STEP="/events over HTTPS with the token, 401 without"
curl -sf --cacert "$SCRATCH/ca.pem" -H "$(auth)" "$URL/events?follow=0" > "$SCRATCH/tls.jsonl" ||
    fail "curl"
head -n 1 "$SCRATCH/tls.jsonl" | grep -q '"type":"run"' || fail "$(head -c 200 "$SCRATCH/tls.jsonl")"
[ "$(code --cacert "$SCRATCH/ca.pem" "$URL/events?follow=0")" = 401 ] || fail "no token"
STEP="attach over HTTPS without --cacert: the certificate refused before the terminal, exit 2"
"$RINGSIDE" attach "$URL" --token-file "$TOKEN" > /dev/null 2> "$SCRATCH/attach-tls.err"
rc=$?
[ "$rc" = 2 ] || fail "exit status $rc: $(cat "$SCRATCH/attach-tls.err")"
grep -q "/events: the server's certificate is not trusted" "$SCRATCH/attach-tls.err" ||
    fail "$(cat "$SCRATCH/attach-tls.err")"
STEP="attach over HTTPS with --cacert: the agent's run in the dashboard, three frames, exit 0"
TERM=xterm-256color "$RINGSIDE" attach "$URL" --token-file "$TOKEN" --cacert "$SCRATCH/ca.pem" \
    --frames 3 > "$SCRATCH/attach-tls.screen" 2> "$SCRATCH/attach-tls.err"
rc=$?
[ "$rc" = 0 ] || fail "exit status $rc: $(cat "$SCRATCH/attach-tls.err")"
STEP="SIGTERM stops the HTTPS agent: exit 0"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
rc=$?
AGENT_PID=""
[ "$rc" = 0 ] || fail "exit status $rc; log: $(tail -n 5 "$SCRATCH/agent6.log")"
echo "$E2E_NAME: passed"
