"""connect(record=FILE) where a link was planted: the link is replaced by the recording, its
target never written (it used to be appended to); an old recording is replaced, not appended
to; a FIFO named there is written in place; the new file takes the umask's mode. No dashboard
is needed: a bridge with record= and no socket records alone."""
import os
import stat
import sys
import tempfile
import threading

sys.path.insert(0, sys.argv[1])
import ringside  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(d, path):
    b = ringside.connect(os.path.join(d, "no-dashboard.sock"), name="record-test",
                         memory_every=0, record=path)
    if not b.enabled:
        fail("a bridge with record= and no dashboard does nothing")
    b.step(1, 0, loss=0.5)
    b.close()


def lines(path):
    with open(path) as f:
        return f.read().splitlines()


def main():
    d = tempfile.mkdtemp()
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious")
    path = os.path.join(d, "run.jsonl")
    os.symlink(victim, path)
    old = os.umask(0o002)
    record(d, path)
    os.umask(old)
    with open(victim) as f:
        if f.read() != "precious":
            fail("the planted link's target was written")
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        fail("the planted link is still there")
    if st.st_mode & 0o777 != 0o664:
        fail("the recording is %o, not 0666 under umask 002" % (st.st_mode & 0o777))
    got = lines(path)
    if not got or '"type":"run"' not in got[0] or '"type":"summary"' not in got[-1]:
        fail("not a recording: %r" % got[:2])
    # a second run over the first: replaced, one run line
    record(d, path)
    if sum('"type":"run"' in line for line in lines(path)) != 1:
        fail("the old recording was appended to")
    if [n for n in os.listdir(d) if ".tmp." in n]:
        fail("a temp file left: %r" % os.listdir(d))
    # a FIFO named as the recording: written in place, through its reader
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    out = []
    reader = threading.Thread(target=lambda: out.append(open(fifo).read()), daemon=True)
    reader.start()
    record(d, fifo)
    reader.join(10)
    if reader.is_alive() or '"type":"run"' not in out[0]:
        fail("the FIFO did not get the stream")
    if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("the FIFO was replaced")
    # a directory there: refused, nothing made in it
    sub = os.path.join(d, "sub")
    os.mkdir(sub)
    try:
        record(d, sub)
        fail("a directory as the recording was taken")
    except IsADirectoryError:
        pass
    if os.listdir(sub):
        fail("something was made in the directory")
    print("test_bridge_record: ok")


if __name__ == "__main__":
    main()
