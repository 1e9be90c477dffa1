"""A small PyTorch training job that uses the bridge (python/ringside), for the watch test.

usage: bridge_job.py OUT_DIR [--steps N] [--step-ms MS] [--record FILE]
                        [--slow-sync-at STEP --slow-sync-s SEC]

Trains a 24-32-16-1 MLP on random data (CPU, or the GPU when there is one) with every bridge
call: phases, step metrics, a timed synchronize every step, a command callback (the commands it
gets are appended to OUT_DIR/commands, one "cmd arg" a line). It runs until N steps are done
or OUT_DIR/stop appears, writes OUT_DIR/steps (the step count) every step, and exits 0. With
--slow-sync-at, that step's timed synchronize takes SEC (a stream whose synchronize sleeps).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ringside  # noqa: E402
import torch  # noqa: E402


class SlowStream:
    """A stream whose synchronize takes as long as asked."""

    def __init__(self, s):
        self.s = s

    def synchronize(self):
        time.sleep(self.s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--record")
    ap.add_argument("--slow-sync-at", type=int, default=-1)
    ap.add_argument("--slow-sync-s", type=float, default=0)
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.SiLU(), torch.nn.Linear(32, 16),
                                torch.nn.SiLU(), torch.nn.Linear(16, 1)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(4096, 24, device=dev), torch.randn(4096, 1, device=dev)
    rs = ringside.connect(name="bridge_job", record=a.record)

    def on_command(cmd, arg):
        with open(os.path.join(a.out, "commands"), "a") as f:
            f.write("%s %d\n" % (cmd, arg))
        if cmd == "chunk_step":
            return "chunk now %+d" % arg
        return None  # the bridge's own handling (cleanup, probe, pause)

    rs.on_command(on_command)
    step = 0
    while step < a.steps and not os.path.exists(os.path.join(a.out, "stop")):
        t0 = time.monotonic()
        i = (step * 256) % 4096
        xb, yb = x[i:i + 256], y[i:i + 256]
        with rs.phase("forward"):
            loss = torch.nn.functional.mse_loss(model(xb), yb)
        with rs.phase("backward"):
            loss.backward()
        with rs.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        with rs.phase("data-shuffle"):  # a name of the script's own
            pass
        if step == a.slow_sync_at:
            rs.synchronize(SlowStream(a.slow_sync_s))
        else:
            rs.synchronize()
        rs.step(1 + step // 16, step, loss=loss.item())
        step += 1
        with open(os.path.join(a.out, "steps.tmp"), "w") as f:
            f.write("%d\n" % step)
        os.replace(os.path.join(a.out, "steps.tmp"), os.path.join(a.out, "steps"))
        left = a.step_ms / 1000 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
    rs.close()
    print("bridge_job: %d steps, %d lines dropped" % (step, rs.dropped))


if __name__ == "__main__":
    main()
