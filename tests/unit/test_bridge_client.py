"""The Python bridge's command reader against a fake dashboard (no torch needed): a malformed
argument is refused with an answer and the job goes on, an overlong line without its newline
is dropped without killing the reader, a stack request is answered at once by the reader (the
thread that connected, then a thread blocked in a timed call with that call's id and its
frames, innermost last), and a dashboard that goes away while the job is paused lets it go
on."""
import json
import os
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, sys.argv[1])
import ringside  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def until(cond, what, limit=10.0):
    end = time.monotonic() + limit
    while not cond():
        if time.monotonic() > end:
            fail(what)
        time.sleep(0.01)


def main():
    d = tempfile.mkdtemp()
    path = os.path.join(d, "b.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    got = []

    def serve(conn):
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                got.append(json.loads(line))

    b = ringside.connect(path, name="client-test", memory_every=0)
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()

    def send(obj):
        conn.sendall((json.dumps(obj) + "\n").encode())

    # a non-integer argument: refused, answered, and the reader lives on
    send({"type": "command", "cmd": "set_chunk", "arg": "lots"})
    until(lambda: (b.step(1, 0, loss=1.0),  # commands are answered at the job's steps
                   any(m.get("type") == "command" and m.get("rc") == -1 for m in got))[1],
          "no refusal for a non-integer argument")
    # a line longer than the reader keeps, with no newline, then a good one
    conn.sendall(b"x" * (ringside.Bridge._LINE_MAX + 4096))
    conn.sendall(b"tail of the long line\n")
    send({"type": "command", "cmd": "probe", "arg": 0})
    until(lambda: (b.step(1, 1, loss=1.0),
                   any(m.get("type") == "command" and m.get("cmd") == "probe" for m in got))[1],
          "the reader died on an overlong line")
    # a stack, answered by the bridge's reader at once (no step() runs meanwhile): the thread
    # that connected first, then a thread blocked in a timed call, with that call's id
    release = threading.Event()

    def blocked_in_timed():
        b.timed("test.blocking_call", release.wait, 10.0)

    worker = threading.Thread(target=blocked_in_timed, name="worker-x", daemon=True)
    worker.start()
    until(lambda: any(m.get("call") == "test.blocking_call" for m in got), "no call line")
    cid = [m for m in got if m.get("call") == "test.blocking_call"][0]["id"]
    send({"type": "command", "cmd": "stack", "arg": "ignored"})
    until(lambda: any(m.get("type") == "stack" for m in got), "no stack answer")
    threads = [m for m in got if m.get("type") == "stack"][0]["threads"]
    if [t["name"] for t in threads] != ["MainThread", "worker-x"]:
        fail("stack threads: %s" % [t["name"] for t in threads])
    if threads[0]["calls"] != [] or threads[1]["calls"] != [cid]:
        fail("stack calls: %s" % [t["calls"] for t in threads])
    mine = [f["func"] for f in threads[1]["frames"] if f["file"] == os.path.abspath(__file__)]
    if not mine or mine[-1] != "blocked_in_timed":
        fail("worker-x's frames of this script: %s" % mine)
    funcs = [f["func"] for f in threads[1]["frames"]]  # outermost first: ours, timed, waits
    k = funcs.index("timed") if "timed" in funcs else 0
    if funcs[k - 1:k + 1] != ["blocked_in_timed", "timed"] or set(funcs[k + 1:]) != {"wait"}:
        fail("worker-x's innermost frames: %s" % funcs)
    release.set()
    worker.join(5.0)
    until(lambda: any(m.get("type") == "call" and m.get("end") and m.get("id") == cid
                      for m in got), "the timed call never ended")
    if any(m.get("type") == "command" and m.get("cmd") == "stack" for m in got):
        fail("a stack request was answered with a command line")
    # paused, then the dashboard goes away: the training thread is let go
    send({"type": "command", "cmd": "pause", "arg": 0})
    until(lambda: b._commands.qsize() > 0 or b._paused, "pause not taken", 5.0)
    done = threading.Event()

    def train():
        for k in range(2, 6):
            b.step(1, k, loss=1.0)
        done.set()

    t = threading.Thread(target=train, daemon=True)
    t.start()
    time.sleep(0.3)  # it is held while the dashboard is there
    if done.is_set():
        fail("the job ran on while paused")
    conn.shutdown(socket.SHUT_RDWR)
    conn.close()
    if not done.wait(2.0):
        fail("a job paused by a dashboard that went away is still held after 2 s")
    print("ok")


main()
