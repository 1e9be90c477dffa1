"""The Python bridge in a two-rank job against fake dashboards (Debian's python3-torch, gloo on
the CPU; skipped, exit 77, where that Python has no torch). Each rank, started by
torch.multiprocessing.spawn, connects to a socket of its own before init_process_group, trains
a DDP model for a few steps and makes explicit all_reduce, broadcast, all_gather, barrier and
asynchronous all_reduce calls; then rank 1 is held in held_before_all_reduce while rank 0 waits
in an all_reduce, both are asked for their stacks, and they go on when the stacks are in.

Checked: the run and rank lines (rank 0/1, world size 2, gloo, the bridge's version, the plan
given to connect); every call entered is left, once; each rank's collectives are numbered
1, 2, ... on the default group and the nth is the same call on both ranks; DDP's buckets are
collectives with bytes; steps_per_s and samples_per_s from batch_size in the metrics; the stack
answers: rank 1's innermost frame of this script is held_before_all_reduce, rank 0's training
thread lists its all_reduce in flight, and no thread of the bridge's own is shown.

usage: test_bridge_ranks.py PYTHON_DIR
"""
import json
import os
import socket
import sys
import tempfile
import threading
import time

PYDIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
STEPS = 3
BATCH = 8
LIMIT = 25.0  # seconds for any one wait (the whole test is well under on two slow cores)


def fail(msg):
    print("FAIL:", msg)
    sys.stdout.flush()
    os._exit(1)


class FakeDashboard:
    """One listening socket, one job: its lines kept, waited on under a condition."""

    def __init__(self, path):
        self.path = path
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.lines = []
        self.cond = threading.Condition()
        self.conn = None
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.srv.accept()
        with self.cond:
            self.conn = conn
            self.cond.notify_all()
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                break
            buf += data
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                with self.cond:
                    self.lines.append(json.loads(raw))
                    self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def wait(self, pred, what):
        with self.cond:
            if not self.cond.wait_for(lambda: pred(self.lines), LIMIT):
                fail("%s: %s" % (self.path, what))

    def send(self, obj):
        self.conn.sendall((json.dumps(obj) + "\n").encode())


def held_before_all_reduce(rs, release):
    """Rank 1 stays here (its phase "held" said) until the test has both stacks."""
    with rs.phase("held"):
        pass
    if not release.wait(LIMIT):
        raise SystemExit("rank 1 was never released")


def worker(rank, pydir, paths, port, release):
    sys.path.insert(0, pydir)
    import ringside
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE="2", LOCAL_RANK=str(rank))
    rs = ringside.connect(paths[rank], name="rank%d" % rank, memory_every=0, epochs=1,
                          steps_per_epoch=STEPS, batch_size=BATCH)
    if not rs.enabled:
        raise SystemExit("rank %d: the bridge did not attach" % rank)
    rs.watch_distributed()
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    model = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(BATCH, 8), torch.randn(BATCH, 1)
    for step in range(STEPS):
        with rs.phase("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with rs.phase("backward"):
            loss.backward()
        with rs.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        rs.step(1, step, loss=loss.item())
    t = torch.ones(16)
    dist.all_reduce(t)
    dist.broadcast(t, 0)
    dist.all_gather([torch.zeros(16), torch.zeros(16)], t)
    dist.barrier()
    dist.all_reduce(t, async_op=True).wait()
    if rank == 1:
        held_before_all_reduce(rs, release)
    dist.all_reduce(t)  # rank 0 waits here for rank 1
    dist.destroy_process_group()
    rs.close()


def check_rank(rank, lines, stack):
    run = lines[0]
    if run.get("type") != "run":
        fail("rank %d: the first line is not the run line: %s" % (rank, run))
    import ringside
    for key, want in (("rank", rank), ("world_size", 2), ("local_rank", rank),
                      ("bridge", ringside.__version__), ("epochs", 1),
                      ("steps_per_epoch", STEPS), ("batch_size", BATCH)):
        if run.get(key) != want:
            fail("rank %d: run line %s=%r, not %r" % (rank, key, run.get(key), want))
    ranks = [m for m in lines if m.get("type") == "rank"]
    if len(ranks) != 1:
        fail("rank %d: %d rank lines" % (rank, len(ranks)))
    for key, want in (("rank", rank), ("world_size", 2), ("group_backend", "gloo"),
                      ("local_rank", rank)):
        if ranks[0].get(key) != want:
            fail("rank %d: rank line %s=%r, not %r" % (rank, key, ranks[0].get(key), want))
    if not str(ranks[0].get("group_id", "")).startswith("env://127.0.0.1:"):
        fail("rank %d: the rank line does not say where the group met: %s" % (rank, ranks[0]))

    calls = [m for m in lines if m.get("type") == "call"]
    entered, ended = {}, set()
    for c in calls:
        if c.get("end"):
            if c["id"] not in entered or c["id"] in ended:
                fail("rank %d: call end %s without one enter" % (rank, c))
            if c.get("rc") != 0:
                fail("rank %d: call failed: %s" % (rank, c))
            ended.add(c["id"])
        else:
            if c["id"] in entered:
                fail("rank %d: call id %d entered twice" % (rank, c["id"]))
            if entered and c["id"] <= max(entered):
                fail("rank %d: call ids do not increase: %s" % (rank, c))
            entered[c["id"]] = c
    if set(entered) != ended:
        fail("rank %d: calls never left: %s" % (rank, sorted(set(entered) - ended)))
    for c in entered.values():
        for key in ("coll", "group", "cseq", "bytes", "thread"):
            if key not in c:
                fail("rank %d: call enter without %s: %s" % (rank, key, c))

    colls = [m for m in lines if m.get("type") == "collective" and m.get("cseq", 0) > 0]
    seqs = sorted(m["cseq"] for m in colls)
    if seqs != list(range(1, len(seqs) + 1)):
        fail("rank %d: collective numbers are not 1..N: %s" % (rank, seqs))
    if any(m.get("group") != 0 for m in colls):
        fail("rank %d: a collective off the default group" % rank)
    buckets = [m for m in colls if m.get("name", "").startswith("ddp bucket ")]
    if len(buckets) < STEPS or any(m.get("bytes", 0) <= 0 for m in buckets):
        fail("rank %d: DDP buckets: %s" % (rank, buckets))
    names = [m.get("name") for m in sorted(colls, key=lambda m: m["cseq"])]
    for want in ("all_reduce", "broadcast", "all_gather", "barrier"):
        if want not in names:
            fail("rank %d: no %s collective: %s" % (rank, want, names))
    for init in ("init_process_group", "destroy_process_group"):
        if not any(m.get("name") == init and m.get("cseq") == 0 for m in lines
                   if m.get("type") == "collective"):
            fail("rank %d: no %s collective with cseq 0" % (rank, init))

    metrics = [m for m in lines if m.get("type") == "metric"]
    if len(metrics) != STEPS:
        fail("rank %d: %d metric lines" % (rank, len(metrics)))
    last = metrics[-1]
    if not last.get("steps_per_s", 0) > 0 or \
            abs(last["samples_per_s"] - BATCH * last["steps_per_s"]) > 1e-6 * last["samples_per_s"]:
        fail("rank %d: metric rates: %s" % (rank, last))

    for t in stack["threads"]:
        if t["name"].startswith("ringside-"):
            fail("rank %d: the bridge's own thread in the stack: %s" % (rank, t["name"]))
        for fr in t["frames"]:
            if set(fr) != {"file", "line", "func", "code"} or len(fr["code"]) > 160:
                fail("rank %d: a frame: %s" % (rank, fr))
    if not stack["threads"]:
        fail("rank %d: a stack answer without threads" % rank)
    main = stack["threads"][0]
    if main["name"] != "MainThread":
        fail("rank %d: the stack's first thread is %s" % (rank, main["name"]))
    ours = [fr for fr in main["frames"]
            if os.path.abspath(fr["file"]) == os.path.abspath(__file__)]
    if not ours:
        fail("rank %d: no frame of this script in %s" % (rank, main["frames"]))
    return names, entered, ours[-1], main


def main():
    if PYDIR is None:
        fail("usage: test_bridge_ranks.py PYTHON_DIR")
    sys.path.insert(0, PYDIR)
    try:
        import torch
        import torch.multiprocessing as mp
        if not torch.distributed.is_available():
            raise ImportError("no torch.distributed")
    except ImportError as e:
        print("skip: %s" % e)
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="rs-ranks-")
    dash = [FakeDashboard(os.path.join(d, "rank%d.sock" % r)) for r in range(2)]
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    release = ctx.Event()
    procs = mp.spawn(worker, args=(PYDIR, [x.path for x in dash], port, release), nprocs=2,
                     join=False)

    # rank 1 held, rank 0 in its last all_reduce: ask both where they are
    dash[1].wait(lambda ls: any(m.get("type") == "phase" and m.get("name") == "held"
                                for m in ls), "rank 1 never reached held_before_all_reduce")

    def in_last_all_reduce(ls):  # the third explicit all_reduce entered and not left
        ar = [m["id"] for m in ls if m.get("type") == "call" and not m.get("end")
              and m.get("call") == "torch.distributed.all_reduce"]
        return len(ar) == 3 and not any(m.get("type") == "call" and m.get("end") and
                                        m["id"] == ar[2] for m in ls)
    dash[0].wait(in_last_all_reduce, "rank 0 never entered its last all_reduce")
    for x in dash:
        x.send({"type": "command", "cmd": "stack", "arg": 0})
    for x in dash:
        x.wait(lambda ls: any(m.get("type") == "stack" for m in ls), "no stack answer")
    stacks = [[m for m in x.lines if m.get("type") == "stack"][0] for x in dash]
    release.set()
    for x in dash:
        with x.cond:
            if not x.cond.wait_for(lambda: x.closed, LIMIT):
                fail("%s: the job did not end its stream" % x.path)
    end = time.monotonic() + LIMIT
    while not procs.join(max(0.1, end - time.monotonic())):  # True once both have ended
        if time.monotonic() > end:
            fail("the ranks did not finish")

    results = [check_rank(r, dash[r].lines, stacks[r]) for r in range(2)]
    met = [[m.get("group_id") for m in dash[r].lines if m.get("type") == "rank"] for r in range(2)]
    if met[0] != met[1]:
        fail("the two ranks say they met in different places: %s" % met)
    if results[0][0] != results[1][0]:
        fail("the ranks' nth collectives differ:\n%s\n%s" % (results[0][0], results[1][0]))
    if results[1][2]["func"] != "held_before_all_reduce":
        fail("rank 1's innermost frame of this script: %s" % results[1][2])
    stuck = [c for c in results[0][1].values() if c["call"] == "torch.distributed.all_reduce"][-1]
    if stuck["id"] not in results[0][3]["calls"]:
        fail("rank 0's stack does not list its all_reduce %d in flight: %s"
             % (stuck["id"], results[0][3]["calls"]))
    if any(m.get("type") == "command" for x in dash for m in x.lines):
        fail("a stack request was answered with a command line")
    print("ok: %d collectives a rank, the same on both" % len(results[0][0]))


if __name__ == "__main__":
    main()
