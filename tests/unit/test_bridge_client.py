"""The Python bridge's command reader against a fake dashboard (no torch needed): a malformed
argument is refused with an answer and the job goes on, an overlong line without its newline
is dropped without killing the reader, and a dashboard that goes away while the job is
paused lets it go on."""
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
