"""The Python bridge's DDP hook in one process (a gloo group of one, CPU; Debian's
python3-torch; skipped, exit 77, without torch), against a fake dashboard: the gradients DDP
gives through our hook are those it gives without it; a model made before watch_distributed()
is watched by watch_ddp(model); a hook the script registers afterwards is the one that runs,
inside ours (its own all_reduce not counted again), a second registration is refused as DDP
refuses it, a built-in hook is run by its Python twin; a model with a hook of its own before
watch_ddp() is left alone with one warning (its hook's all_reduce is timed as that). Each bucket is one call, entered and left, and one
collective named "ddp bucket N" with its bytes.

usage: test_bridge_ddp.py PYTHON_DIR
"""
import json
import os
import socket
import sys
import tempfile
import threading
import warnings

sys.path.insert(0, sys.argv[1])


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        if not dist.is_available():
            raise ImportError("no torch.distributed")
    except ImportError as e:
        print("skip: %s" % e)
        sys.exit(77)
    import ringside
    from torch.nn.parallel import DistributedDataParallel as DDP

    d = tempfile.mkdtemp(prefix="rs-ddp-")
    path = os.path.join(d, "b.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    lines, cond = [], threading.Condition()

    def serve():
        conn, _ = srv.accept()
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                with cond:
                    lines.append(json.loads(raw))
                    cond.notify_all()

    threading.Thread(target=serve, daemon=True).start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)

    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    x = torch.randn(4, 6)
    plain = net()
    plain(x).sum().backward()
    want = [p.grad.clone() for p in plain.parameters()]

    early = DDP(net())  # before the bridge patches DDP
    early_own = DDP(net())
    early_own.register_comm_hook(None, default_hooks.allreduce_hook)
    rs = ringside.connect(path, name="ddp-test", memory_every=0)
    rs.watch_distributed()

    marks = [0]

    def settle():
        """Every line so far at the fake dashboard: a marker phase after them has come."""
        marks[0] += 1
        name = "mark%d" % marks[0]
        with rs.phase(name):
            pass
        with cond:
            if not cond.wait_for(lambda: any(m.get("name") == name for m in lines), 10.0):
                fail("the lines stopped coming")
        if rs._inflight:
            fail("calls still in flight: %s" % rs._inflight)

    def grads_ok(model, what, tol=0.0):
        for p, w in zip(model.parameters(), want):
            if not torch.allclose(p.grad, w, atol=tol, rtol=tol):
                fail("%s: gradients differ from DDP's without the bridge" % what)

    def step(model, what, tol=0.0):
        settle()
        k = len(lines)
        model(x).sum().backward()
        settle()
        got = [m for m in lines[k:] if m.get("type") == "collective"]
        if not got or any(not m.get("name", "").startswith("ddp bucket ") for m in got):
            fail("%s: collectives of a backward: %s" % (what, got))
        if any(m.get("bytes", 0) <= 0 or m.get("rc") != 0 for m in got):
            fail("%s: a bucket without bytes or failed: %s" % (what, got))
        calls = [m for m in lines[k:] if m.get("type") == "call"]
        if len(calls) != 2 * len(got) or len({m["id"] for m in calls}) != len(got):
            fail("%s: calls of a backward: %s" % (what, calls))
        grads_ok(model, what, tol)
        return got

    step(rs.watch_ddp(early), "watch_ddp on a model made before watch_distributed")

    ran = []

    def my_hook(state, bucket):
        ran.append(bucket.index() if hasattr(bucket, "index") else 0)
        return default_hooks.allreduce_hook(state, bucket)
    late = DDP(net())
    late.register_comm_hook(None, my_hook)
    step(late, "a hook of the script's")
    if not ran:
        fail("the script's hook never ran")
    try:
        late.register_comm_hook(None, my_hook)
        fail("a second register_comm_hook was taken")
    except RuntimeError:
        pass

    kinds = getattr(dist, "BuiltinCommHookType", None)
    reg = getattr(DDP, "_register_builtin_comm_hook", None) or \
        getattr(DDP, "register_builtin_comm_hook", None)
    if kinds is not None and reg is not None:
        fp16 = DDP(net())
        reg(fp16, kinds.FP16_COMPRESS)
        step(fp16, "the built-in FP16 hook", tol=1e-2)

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        rs.watch_ddp(early_own)
    if len(said) != 1 or "not timed" not in str(said[0].message):
        fail("watch_ddp on a model with its own hook: %s" % [str(w.message) for w in said])
    settle()
    k = len(lines)
    early_own(x).sum().backward()
    grads_ok(early_own, "a model with its own hook")
    settle()
    # its hook's all_reduce is torch.distributed's, so it is timed as that, not as a bucket
    if any(m.get("type") == "collective" and m.get("name") != "all_reduce" for m in lines[k:]):
        fail("buckets timed on a model whose hook is not ours")

    dist.destroy_process_group()
    rs.close()
    print("ok")


main()
