#!/usr/bin/env python3
"""PyTorch DDP reference figures for the multi-GPU benchmark (not a test).

Launch with
    torchrun --standalone --nproc_per_node=N tests/bench/torch_ddp.py [--quick]

Measures, on N GPUs of one host (one process each, NCCL): the time to set up the process group
(init_process_group, the device's context and the first all_reduce, which creates NCCL's
communicator), all_reduce latency and bus bandwidth at 5380 B, 1 MiB, 64 MiB and 256 MiB, the
24 -> hidden -> 1 SiLU MLP's Adam step rate under DistributedDataParallel (eager) at hidden
(32, 16) batch 256 and hidden (128, 64) batch 4096 per GPU, and destroy_process_group's time.

Output (rank 0 only): `key=value` lines and `name field=value ...` records on stdout, `#`
comment lines beside them and nothing else (everything PyTorch and NCCL print goes to stderr):
    torch_world=2
    torch_init_s=1.23
    torch_allreduce_us bytes=5380 us=25.1 busbw_GBps=0.21
    torch_ddp_mlp hidden=32,16 batch_per_gpu=256 steps_per_s=950
    torch_destroy_s=0.012
Times are wall-clock over a number of repetitions between two synchronizes, after warm-ups.

Exit status: 0 when every figure was measured, 1 when a section failed (its keys are missing,
the reason is on stderr and in a comment line), 2 when torch cannot be imported or sees no CUDA
device.
"""
import argparse
import os
import sys
import time
import traceback

SIZES = ((5380, 2000, 500), (1 << 20, 500, 100), (64 << 20, 50, 10), (256 << 20, 20, 5))
MLPS = (((32, 16), 256), ((128, 64), 4096))
FEATURES = 24
LR = 2e-4

OUT = None
FAILED = []


def open_result_stream(rank):
    """Rank 0's results go to a private copy of stdout; fd 1 itself is pointed at stderr on every
    rank, so whatever else writes to stdout (libraries, NCCL's log) cannot mix with them."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", buffering=1) if rank == 0 else open(os.devnull, "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def emit(line):
    OUT.write(line + "\n")


def comment(text):
    OUT.write("# " + " ".join(str(text).split()) + "\n")


def section(name, fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - any failure of a section is reported, not fatal
        traceback.print_exc()
        comment(f"{name} failed: {type(e).__name__}: {e}"[:300])
        FAILED.append(name)


def bench_allreduce(torch, dist, world, quick):
    def ar(nbytes, reps):
        t = torch.ones(max(1, nbytes // 4), device="cuda")
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        s = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        return (time.perf_counter() - s) / reps

    for nb, reps, quick_reps in SIZES:
        dt = ar(nb, quick_reps if quick else reps)
        busbw = 2 * (world - 1) / world * nb / dt / 1e9
        emit(f"torch_allreduce_us bytes={nb} us={dt * 1e6:.2f} busbw_GBps={busbw:.2f}")


def bench_mlp(torch, hid, bs, steps):
    layers, d = [], FEATURES
    for h in hid:
        layers += [torch.nn.Linear(d, h), torch.nn.SiLU()]
        d = h
    layers.append(torch.nn.Linear(d, 1))
    m = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers).cuda())
    opt = torch.optim.Adam(m.parameters(), lr=LR)
    xb = torch.randn(bs, FEATURES, device="cuda")
    yb = torch.randn(bs, 1, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(m(xb), yb)
        loss.backward()
        opt.step()

    for _ in range(20):
        step()
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    sps = steps / (time.perf_counter() - s)
    emit(f"torch_ddp_mlp hidden={','.join(str(h) for h in hid)} batch_per_gpu={bs} "
         f"steps={steps} steps_per_s={sps:.0f}")


def main():
    global OUT
    ap = argparse.ArgumentParser(description="PyTorch DDP reference figures for bench_multi.")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (same warm-ups)")
    args = ap.parse_args()
    OUT = open_result_stream(int(os.environ.get("RANK", "0")))

    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # noqa: BLE001 - ImportError or a broken install
        comment(f"torch unavailable: {type(e).__name__}: {e}")
        print(f"torch_ddp: cannot import torch: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        comment(f"torch {torch.__version__} sees no CUDA device")
        print("torch_ddp: torch.cuda.is_available() is false", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    x = torch.ones(1, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t_init = time.perf_counter() - t0

    emit(f"torch_world={world}")
    emit(f"torch_device={torch.cuda.get_device_name(0)}")
    emit(f"torch_version={torch.__version__}")
    v = torch.cuda.nccl.version()  # a tuple; an int (2708 = 2.7.8) in old releases
    emit("torch_nccl_version=" + (".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)))
    emit(f"torch_init_s={t_init:.4f}")
    comment(f"quick={int(args.quick)}; init_s: init_process_group, the device's context and "
            "the first all_reduce")

    section("all_reduce", bench_allreduce, torch, dist, world, args.quick)
    for hid, bs in MLPS:
        section(f"ddp mlp {hid} b{bs}", bench_mlp, torch, hid, bs, 100 if args.quick else 300)

    dist.barrier()
    s = time.perf_counter()
    dist.destroy_process_group()
    emit(f"torch_destroy_s={time.perf_counter() - s:.4f}")
    if FAILED:
        comment("failed sections: " + ", ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
