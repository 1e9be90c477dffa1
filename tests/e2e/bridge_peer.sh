#!/usr/bin/env bash
# The Python bridge refuses a dashboard that runs as another user: as root, a fake dashboard
# (a listening socket, the standard library alone) runs as user nobody through setpriv; a job
# of root's that connects to it must say one line naming the socket and nobody's uid, do
# nothing (enabled False) and send it nothing. Then the same fake dashboard run as root is
# accepted (root's own).
#
# usage: bridge_peer.sh RINGSIDE SCRATCH_DIR    (Python: $RS_PYTHON, default /usr/bin/python3)
# Exit 77 (skipped) when not root, or without setpriv or the user nobody.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 RINGSIDE SCRATCH_DIR" >&2; exit 2; }
PY=${RS_PYTHON:-/usr/bin/python3}
PYDIR=$(cd "$(dirname "$0")/../../python" && pwd)
NAME="bridge peer e2e"
if [ "$(id -u)" -ne 0 ]; then
    echo "$NAME: not root (setpriv cannot become nobody): skipped"
    exit 77
fi
if ! command -v setpriv > /dev/null 2>&1 || ! id nobody > /dev/null 2>&1 ||
    ! getent group nogroup > /dev/null 2>&1; then
    echo "$NAME: no setpriv, user nobody or group nogroup: skipped"
    exit 77
fi
fail() {
    echo "$NAME: FAIL: $*" >&2
    exit 1
}

rm -rf "$2"
mkdir -p "$2"
# nobody must reach its socket: a directory of its own under /tmp (the build tree may be closed)
DIR=$(mktemp -d /tmp/ringside-peer.XXXXXX)
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2> /dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
chmod 0755 "$DIR"
chown nobody:nogroup "$DIR"

# The fake dashboard: listens, says "ready" on stdout, takes one connection and writes the
# number of bytes it got (up to the job's end of stream) to its second argument.
SERVER='
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept(); c.settimeout(20); n = 0
try:
    while True:
        d = c.recv(65536)
        if not d: break
        n += len(d)
except socket.timeout:
    n = -1
open(sys.argv[2], "w").write("%d\n" % n)
'
JOB='
import sys, warnings
sys.path.insert(0, sys.argv[2])
import ringside
warnings.simplefilter("always")
b = ringside.connect(sys.argv[1], memory_every=0)
b.step(1, 0, loss=1.0)
b.close()
print("enabled=%s" % b.enabled)
'

# serve USER SOCKET GOT: the fake dashboard as USER, started once it listens
serve() {
    local fifo=$DIR/ready.$1
    mkfifo "$fifo"
    if [ "$1" = nobody ]; then
        setpriv --reuid=nobody --regid=nogroup --clear-groups "$PY" -c "$SERVER" "$2" "$3" \
            > "$fifo" &
    else
        "$PY" -c "$SERVER" "$2" "$3" > "$fifo" &
    fi
    SERVER_PID=$!
    local line=""
    read -r -t 20 line < "$fifo" || true
    [ "$line" = ready ] || fail "the fake dashboard as $1 did not start"
}

NOBODY=$(id -u nobody)
serve nobody "$DIR/nobody.sock" "$DIR/nobody.got"
[ "$(stat -c %U "$DIR/nobody.sock")" = nobody ] || fail "the socket is not nobody's"
"$PY" -c "$JOB" "$DIR/nobody.sock" "$PYDIR" > "$2/job.out" 2> "$2/job.err" ||
    fail "the job failed: $(cat "$2/job.err")"
wait "$SERVER_PID" || fail "the fake dashboard as nobody failed"
SERVER_PID=""
grep -qx 'enabled=False' "$2/job.out" || fail "nobody's dashboard was accepted: $(cat "$2/job.out")"
[ "$(grep -c 'ringside:' "$2/job.err")" -eq 1 ] || fail "not one warning: $(cat "$2/job.err")"
grep 'ringside:' "$2/job.err" | grep -qF "$DIR/nobody.sock" || fail "the warning names no socket"
grep 'ringside:' "$2/job.err" | grep -q "uid $NOBODY," || fail "the warning names no uid"
[ "$(cat "$DIR/nobody.got")" = 0 ] || fail "the job sent $(cat "$DIR/nobody.got") bytes to nobody"

serve root "$DIR/root.sock" "$DIR/root.got"
"$PY" -c "$JOB" "$DIR/root.sock" "$PYDIR" > "$2/job.out" 2> "$2/job.err" ||
    fail "the job failed: $(cat "$2/job.err")"
wait "$SERVER_PID" || fail "the fake dashboard as root failed"
SERVER_PID=""
grep -qx 'enabled=True' "$2/job.out" || fail "root's dashboard was refused: $(cat "$2/job.err")"
[ "$(cat "$DIR/root.got")" -gt 0 ] || fail "the job sent nothing to root's dashboard"
echo "$NAME: ok"
