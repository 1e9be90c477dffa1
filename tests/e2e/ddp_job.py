"""A PyTorch DistributedDataParallel job of N gloo ranks (torch.multiprocessing.spawn, CPU) that
streams every rank into `ringside watch` through the bridge, for the DDP test; faults on demand.

usage: ddp_job.py OUT_DIR [--ranks N] [--epochs E] [--steps S] [--step-ms MS] [--plain]
                          [--device cpu|cuda] [--backend gloo|nccl] [--kernel-step K --kernel-s SEC]
                          [--hold-rank R --hold-step K --hold-s SEC]
                          [--sync-step K --sync-s SEC] [--destroy-hold-s SEC]
                          [--exit-rank R --exit-step K]

Each rank trains a small MLP wrapped in DDP (--plain: no DDP, an explicit all_reduce of the
loss each step instead) on random data, with an explicit all_reduce of the loss every step and
a barrier at each epoch's end, and writes OUT_DIR/rankR.steps (its step count) each step.
Faults:
  --hold-rank R: at step K rank R sleeps SEC in held_before_all_reduce() before its all_reduce,
                 so the other ranks wait in it
  --sync-step K: at step K rank 0's timed synchronize takes SEC (a stream whose synchronize
                 sleeps: the CPU has no device to wait for)
  --destroy-hold-s: the last rank stays SEC in destroy_process_group after the others left
  --kernel-step K: at step K rank 0 launches a kernel that runs SEC (torch.cuda._sleep) and
                 waits for it in a timed synchronize: the GPU busy all along (--device cuda)
  --exit-rank R: rank R exits (os._exit(3)) 3 s into its all_reduce of step K (one that waits
                 for a held rank: with --hold-rank)
It ends when the steps are done, or at once when OUT_DIR/stop appears (every rank looks).
"""
import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ringside  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


class SlowStream:
    """A stream whose synchronize takes as long as asked (a stand-in for a GPU's slow sync)."""

    def __init__(self, s):
        self.s = s

    def synchronize(self):
        time.sleep(self.s)


def held_before_all_reduce(s):
    time.sleep(s)  # the rank the others wait for


def rank_main(rank, a, port):
    torch.manual_seed(rank)
    dev = torch.device("cpu")
    if a.device == "cuda":
        dev = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
    rs = ringside.connect(name="ddp_job", epochs=a.epochs, steps_per_epoch=a.steps,
                          batch_size=64)
    real_destroy = dist.destroy_process_group

    def destroy(*args, **kwargs):
        if a.destroy_hold_s and rank == a.ranks - 1:
            time.sleep(a.destroy_hold_s)  # the others have left: the teardown hang
        return real_destroy(*args, **kwargs)

    dist.destroy_process_group = destroy
    rs.watch_distributed()
    dist.init_process_group(a.backend, init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=a.ranks)
    model = torch.nn.Sequential(torch.nn.Linear(24, 64), torch.nn.SiLU(),
                                torch.nn.Linear(64, 1)).to(dev)
    if not a.plain:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dev.index] if dev.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(1024, 24, device=dev), torch.randn(1024, 1, device=dev)
    cycles = 0
    if a.kernel_s and rank == 0:  # how many cycles the sleep kernel spins in a second
        torch.cuda.synchronize()
        t = time.monotonic()
        torch.cuda._sleep(100000000)
        torch.cuda.synchronize()
        cycles = int(100000000 / (time.monotonic() - t) * a.kernel_s)
    stop = os.path.join(a.out, "stop")
    done = 0
    for epoch in range(1, a.epochs + 1):
        for step in range(a.steps):
            t0 = time.monotonic()
            i = (step * 64) % 1024
            with rs.phase("forward"):
                loss = torch.nn.functional.mse_loss(model(x[i:i + 64]), y[i:i + 64])
            with rs.phase("backward"):
                loss.backward()  # DDP's gradient all-reduce runs here
            with rs.phase("optimizer"):
                opt.step()
                opt.zero_grad()
            if a.hold_rank == rank and done == a.hold_step:
                held_before_all_reduce(a.hold_s)
            if a.exit_rank == rank and done == a.exit_step:
                threading.Timer(3.0, os._exit, (3,)).start()  # 3 s into its all_reduce
            if rank == 0 and done == a.sync_step:
                rs.synchronize(SlowStream(a.sync_s))
            if rank == 0 and done == a.kernel_step and cycles:
                torch.cuda._sleep(cycles)  # a kernel that runs for kernel_s
                rs.synchronize()
            mean = loss.detach().clone()
            with rs.phase("allreduce"):
                dist.all_reduce(mean)
            rs.step(epoch, step, loss=mean.item() / a.ranks)
            done += 1
            with open(os.path.join(a.out, "rank%d.steps" % rank), "w") as f:
                f.write("%d\n" % done)
            if os.path.exists(stop):
                break
            left = a.step_ms / 1000 - (time.monotonic() - t0)
            if left > 0:
                time.sleep(left)
        dist.barrier()
        if os.path.exists(stop):
            break
    dist.destroy_process_group()
    rs.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--plain", action="store_true")
    ap.add_argument("--hold-rank", type=int, default=-1)
    ap.add_argument("--hold-step", type=int, default=-1)
    ap.add_argument("--hold-s", type=float, default=0)
    ap.add_argument("--sync-step", type=int, default=-1)
    ap.add_argument("--sync-s", type=float, default=0)
    ap.add_argument("--destroy-hold-s", type=float, default=0)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    ap.add_argument("--kernel-step", type=int, default=-1)
    ap.add_argument("--kernel-s", type=float, default=0)
    ap.add_argument("--exit-rank", type=int, default=-1)
    ap.add_argument("--exit-step", type=int, default=-1)
    a = ap.parse_args()
    torch.set_num_threads(1)
    mp.spawn(rank_main, args=(a, free_port()), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
