"""The Python bridge refuses a dashboard of another user (the standard library alone). The uid
SO_PEERCRED gives is this process's own here (the fake dashboard is this test), so the check's
input, ringside._peer_uid, is replaced to say another uid: the job warns once, naming the socket
and that uid, does nothing (enabled False, nothing sent, no recording written, its calls
harmless) and closes the connection. The real SO_PEERCRED answer is this user's, which is
accepted, and so is root's. (tests/e2e/bridge_peer.sh, as root, refuses a real dashboard of
user nobody.)

usage: test_bridge_peer.py PYTHON_DIR
"""
import os
import socket
import sys
import tempfile
import threading
import warnings

sys.path.insert(0, sys.argv[1])
import ringside  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Server:
    """Accepts one connection and keeps every byte it gets until the job closes it."""

    def __init__(self, path):
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.data = b""
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.srv.accept()
        conn.settimeout(10.0)
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                self.data += chunk
        except socket.timeout:
            pass
        conn.close()
        self.srv.close()
        self.done.set()


def attach(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = ringside.connect(path, memory_every=0, **kw)
    return b, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def main():
    d = tempfile.mkdtemp(prefix="rs-peer-")
    real = ringside._peer_uid

    # the real answer: this user
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv = Server(os.path.join(d, "own.sock"))
    s.connect(os.path.join(d, "own.sock"))
    if real(s) != os.getuid():
        fail("SO_PEERCRED says uid %r, not ours (%d)" % (real(s), os.getuid()))
    s.close()
    srv.done.wait(10.0)

    # another user's dashboard: refused
    other = 4242 if os.getuid() != 4242 else 4243
    ringside._peer_uid = lambda sock: other
    path = os.path.join(d, "other.sock")
    srv = Server(path)
    record = os.path.join(d, "run.jsonl")
    b, said = attach(path, record=record)
    if b.enabled:
        fail("a dashboard of uid %d was accepted" % other)
    if len(said) != 1 or path not in said[0] or ("uid %d" % other) not in said[0]:
        fail("the refusal's warning: %s" % said)
    b.step(1, 0, loss=1.0)
    with b.phase("forward"):
        pass
    b.watch_distributed()
    b.close()
    if not srv.done.wait(10.0):
        fail("the refused connection was not closed")
    if srv.data:
        fail("the job sent %d bytes to a refused dashboard: %r" % (len(srv.data), srv.data[:200]))
    if os.path.exists(record):
        fail("a refused job wrote its recording")

    # root's dashboard: accepted
    ringside._peer_uid = lambda sock: 0
    path = os.path.join(d, "root.sock")
    srv = Server(path)
    b, said = attach(path)
    if not b.enabled or said:
        fail("a dashboard of root was refused: %s" % said)
    b.close()
    if not srv.done.wait(10.0) or b'"type":"run"' not in srv.data:
        fail("the accepted job sent no run line")
    ringside._peer_uid = real
    print("ok")


main()
