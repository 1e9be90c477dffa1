"""What the Python bridge costs a PyTorch training script, measured against the same script
without it in one run, and the allocator figures it sends beside torch.cuda.memory_stats().

usage: bench_bridge.py [--steps N] [--rounds R] [--hidden 2048] [--batch 8192] [--socket PATH]
       bench_bridge.py --ddp [--device auto|cpu|cuda] [--steps N] [--rounds R] [--hidden H]
                       [--batch B] [--socket PATH]

The script: an MLP (24 inputs, two hidden layers of --hidden, AdamW) on the GPU, each step a
forward, backward and optimizer step. Rounds alternate plain (no bridge calls at all) and
bridged (a phase around each of the three, rs.step() with the loss every step, a timed
synchronize every step, the allocator read every 20 steps and its segments every 100), each
round timed from a synchronize to a synchronize. Prints key=value lines: steps/s of each, their
ratio (the bridge's cost), and at the end the allocator as memory_stats() gives it and as the
bridge last sent it.

--ddp: the cost of watch_distributed()'s hooks. The same MLP under DistributedDataParallel in a
process group of one rank (gloo on the CPU; NCCL on the GPU when there is one), each step also
all-reducing its loss; rounds alternate plain (a DDP model made before watch_distributed(), the
unwrapped all_reduce), pyhook (the same with the default hook's Python twin registered: what
any Python communication hook costs DDP), hooked (a DDP model made after it: each gradient
bucket through the bridge's hook, the wrapped all_reduce, nothing else of the bridge's) and
bridged (hooked, plus the phases and rs.step() with loss.item()). Prints each one's steps/s and
the costs: a Python hook's and the hooks' against plain, the hooks' against pyhook (the
bridge's own share), the whole bridge's against plain. Without --socket (and no `ringside watch` at the default path) the lines go to a
sink process of its own that reads and drops them.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ringside  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8192)
    ap.add_argument("--socket")
    ap.add_argument("--ddp", action="store_true")
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    a = ap.parse_args()
    if a.ddp:
        return ddp_main(a)
    dev = "cuda"
    torch.manual_seed(0)
    h = a.hidden
    model = torch.nn.Sequential(torch.nn.Linear(24, h), torch.nn.SiLU(), torch.nn.Linear(h, h),
                                torch.nn.SiLU(), torch.nn.Linear(h, 1)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, 24, device=dev)
    y = torch.randn(a.batch, 1, device=dev)
    rs = ringside.connect(a.socket, name="bench_bridge", memory_every=20)
    if not rs.enabled:
        sys.exit("bench_bridge: no ringside watch at %s" % rs.path)

    def plain(n):
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    step = [0]

    def bridged(n):
        for _ in range(n):
            with rs.phase("forward"):
                loss = torch.nn.functional.mse_loss(model(x), y)
            with rs.phase("backward"):
                loss.backward()
            with rs.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            rs.synchronize()
            rs.step(1, step[0], loss=loss.item())
            step[0] += 1
            if step[0] % 100 == 0:
                rs.snapshot()

    def plain_synced(n):  # what the bridged loop waits for without the bridge: item() syncs
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            loss.item()

    for fn in (plain, plain_synced, bridged):  # warm up every path
        fn(20)
    rates = {"plain": [], "plain_synced": [], "bridged": []}
    for r in range(a.rounds):
        for name, fn in (("plain", plain), ("plain_synced", plain_synced), ("bridged", bridged)):
            torch.cuda.synchronize()
            t = time.perf_counter()
            fn(a.steps)
            torch.cuda.synchronize()
            rates[name].append(a.steps / (time.perf_counter() - t))
    best = {k: max(v) for k, v in rates.items()}
    print("torch=%s device=%s hidden=%d batch=%d steps=%d rounds=%d" % (
        torch.__version__, torch.cuda.get_device_name(0), h, a.batch, a.steps, a.rounds))
    for k, v in rates.items():
        print("%s_steps_per_s_best=%.1f median=%.1f" % (k, best[k], sorted(v)[len(v) // 2]))
    print("bridge_cost_vs_synced_pct=%.2f goal=2" % (100 * (1 - best["bridged"] / best["plain_synced"])))
    print("bridge_cost_vs_plain_pct=%.2f" % (100 * (1 - best["bridged"] / best["plain"])))
    print("lines_dropped=%d" % rs.dropped)
    rs._memory_read(True)  # what the dashboard shows now, read the bridge's way ...
    st = torch.cuda.memory_stats()
    print("memory_stats allocated=%d reserved=%d segments=%d" % (
        st["allocated_bytes.all.current"], st["reserved_bytes.all.current"],
        st["segment.all.current"]))  # ... and memory_stats() at the same moment
    print("bridge_sent largest_free=%d" % rs._largest)
    sys.stdout.flush()
    time.sleep(float(os.environ.get("BENCH_BRIDGE_HOLD", "3")))  # for a screen capture
    rs.close()


_SINK = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
while c.recv(1 << 20):
    pass
"""


def sink():
    """A process that takes the bridge's lines and drops them: (its socket, the process)."""
    d = tempfile.mkdtemp(prefix="bench-bridge-")
    path = os.path.join(d, "sink.sock")
    p = subprocess.Popen([sys.executable, "-c", _SINK, path], stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        sys.exit("bench_bridge: the sink did not start")
    return path, p


def ddp_main(a):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    cuda = torch.cuda.is_available() if a.device == "auto" else a.device == "cuda"
    dev = "cuda" if cuda else "cpu"
    if a.hidden == 2048 and a.batch == 8192 and not cuda:  # the GPU's sizes are minutes here
        a.hidden, a.batch = 64, 256
    backend = "nccl" if cuda and dist.is_nccl_available() else "gloo"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    path, proc = a.socket, None
    if path is None and not os.path.exists(ringside.default_path()):
        path, proc = sink()
    torch.manual_seed(0)
    h = a.hidden

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(24, h), torch.nn.SiLU(), torch.nn.Linear(h, h),
                                   torch.nn.SiLU(), torch.nn.Linear(h, 1)).to(dev)
    x = torch.randn(a.batch, 24, device=dev)
    y = torch.randn(a.batch, 1, device=dev)
    rs = ringside.connect(path, name="bench_bridge_ddp", memory_every=20)
    if not rs.enabled:
        sys.exit("bench_bridge: no dashboard at %s" % rs.path)
    dist.init_process_group(backend, rank=0, world_size=1)
    plain_model = DDP(mlp())  # made before the hooks: DDP's own all-reduce
    all_reduce = dist.all_reduce

    def python_allreduce(state, bucket):  # the default hook without the bridge's all_reduce
        t = bucket.buffer().div_(dist.get_world_size())
        return all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0])
    pyhook_model = DDP(mlp())
    pyhook_model.register_comm_hook(None, python_allreduce)
    rs.watch_distributed()
    hooked_model = DDP(mlp())  # made after: its buckets through the bridge's hook
    models = (plain_model, pyhook_model, hooked_model)
    opts = {id(m): torch.optim.AdamW(m.parameters(), lr=1e-4) for m in models}

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def plain(n):
        opt = opts[id(plain_model)]
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(plain_model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            all_reduce(loss.detach())

    def pyhook(n):
        opt = opts[id(pyhook_model)]
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(pyhook_model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            all_reduce(loss.detach())

    def hooked(n):
        opt = opts[id(hooked_model)]
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(hooked_model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            dist.all_reduce(loss.detach())

    step = [0]

    def bridged(n):
        opt = opts[id(hooked_model)]
        for _ in range(n):
            with rs.phase("forward"):
                loss = torch.nn.functional.mse_loss(hooked_model(x), y)
            with rs.phase("backward"):
                loss.backward()
            with rs.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            dist.all_reduce(loss.detach())
            rs.step(1, step[0], loss=loss.item())
            step[0] += 1

    modes = (("plain", plain), ("pyhook", pyhook), ("hooked", hooked), ("bridged", bridged))
    for _, fn in modes:  # warm up every path
        fn(10)
    rates = {k: [] for k, _ in modes}
    for r in range(a.rounds):
        for name, fn in modes:
            sync()
            t = time.perf_counter()
            fn(a.steps)
            sync()
            rates[name].append(a.steps / (time.perf_counter() - t))
    best = {k: max(v) for k, v in rates.items()}
    buckets = len({n for n in rs._call_json if "ddp bucket" in n})
    print("mode=ddp torch=%s device=%s backend=%s hidden=%d batch=%d steps=%d rounds=%d "
          "buckets=%d" % (torch.__version__, torch.cuda.get_device_name(0) if cuda else "cpu",
                          backend, h, a.batch, a.steps, a.rounds, buckets))
    for k, v in rates.items():
        print("%s_steps_per_s_best=%.1f median=%.1f" % (k, best[k], sorted(v)[len(v) // 2]))
    print("python_hook_cost_vs_plain_pct=%.2f" % (100 * (1 - best["pyhook"] / best["plain"])))
    print("hooks_cost_vs_plain_pct=%.2f" % (100 * (1 - best["hooked"] / best["plain"])))
    print("hooks_cost_vs_python_hook_pct=%.2f" % (100 * (1 - best["hooked"] / best["pyhook"])))
    print("bridge_cost_vs_plain_pct=%.2f" % (100 * (1 - best["bridged"] / best["plain"])))
    print("lines_dropped=%d" % rs.dropped)
    sys.stdout.flush()
    dist.destroy_process_group()
    rs.close()
    if proc is not None:
        proc.wait(10)


if __name__ == "__main__":
    main()
