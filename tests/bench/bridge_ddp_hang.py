"""Two ranks (torchrun --nproc_per_node=2) train a few steps with the bridge's
watch_distributed(), then rank 1 hangs in destroy_process_group: before the real call it joins
an all_reduce that rank 0, already gone, never joins. The dashboard must show the HANG naming
rank 1 and the call. Rank 1 leaves after --hang-s seconds (os._exit: a hung NCCL call cannot be
undone), so the run ends by itself.

usage: torchrun --nproc_per_node=2 bridge_ddp_hang.py [--steps N] [--hang-s S]
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import ringside  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--hang-s", type=float, default=20)
    a = ap.parse_args()
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    rs = ringside.connect(name="ddp_rank%d" % rank, device=rank, rank=rank)
    real_destroy = dist.destroy_process_group

    def destroy_with_a_hang(*args, **kwargs):  # the fault, on rank 1 only
        if rank == 1:
            threading.Timer(a.hang_s, lambda: os._exit(3)).start()
            real_all_reduce(torch.ones(1, device="cuda"))  # rank 0 has left: never completes
            torch.cuda.synchronize()
        return real_destroy(*args, **kwargs)

    dist.destroy_process_group = destroy_with_a_hang
    real_all_reduce = dist.all_reduce  # the fault calls it unannounced: destroy is the call
    rs.watch_distributed()  # wraps init/destroy/barrier/all_reduce (the fault inside destroy)
    dist.init_process_group("nccl")
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(24, 128), torch.nn.SiLU(),
                            torch.nn.Linear(128, 1)).cuda(), device_ids=[rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(4096, 24, device="cuda"), torch.randn(4096, 1, device="cuda")
    for step in range(a.steps):
        with rs.phase("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        with rs.phase("backward"):
            loss.backward()
        with rs.phase("optimizer"):
            opt.step()
            opt.zero_grad()
        rs.step(1, step, loss=loss.item())
        time.sleep(0.01)
    if rank == 0:  # rank 0 leaves without its part of rank 1's all_reduce
        rs.close()
        os._exit(0)
    dist.destroy_process_group()
    rs.close()


if __name__ == "__main__":
    main()
