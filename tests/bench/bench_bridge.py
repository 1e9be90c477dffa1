"""What the Python bridge costs a PyTorch training script, measured against the same script
without it in one run, and the allocator figures it sends beside torch.cuda.memory_stats().

usage: bench_bridge.py [--steps N] [--rounds R] [--hidden 2048] [--batch 8192] [--socket PATH]

The script: an MLP (24 inputs, two hidden layers of --hidden, AdamW) on the GPU, each step a
forward, backward and optimizer step. Rounds alternate plain (no bridge calls at all) and
bridged (a phase around each of the three, rs.step() with the loss every step, a timed
synchronize every step, the allocator read every 20 steps and its segments every 100), each
round timed from a synchronize to a synchronize. Prints key=value lines: steps/s of each, their
ratio (the bridge's cost), and at the end the allocator as memory_stats() gives it and as the
bridge last sent it.
"""
import argparse
import os
import sys
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
    a = ap.parse_args()
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


if __name__ == "__main__":
    main()
