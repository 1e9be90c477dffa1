"""A stand-in for one rank of a PyTorch job on the CPU (gloo), for the ranks test: the standard
library alone, no torch. It connects to `ringside watch --socket SOCKET` and streams what the
Python bridge (python/ringside) sends: the run line with the job's rank, world size, process
group backend, epochs, steps per epoch and batch size; then per step its phases, a timed
synchronize, an all-reduce (announced, then its collective line) and a metric line with the
loss, steps_per_s and samples_per_s. No memory lines: a CPU job has no caching allocator.

usage: fake_rank_job.py SOCKET --rank R [--world-size W] [--epochs E] [--steps-per-epoch S]
                        [--batch-size B] [--step-ms MS] [--global-steps] [--stop FILE]

The step counter it reports is per epoch (1..S), as `for step in range(...)` scripts count,
or with --global-steps one that runs on over the epochs. After E epochs it sends its summary
and exits 0; --epochs 0 tells no length (the run line's 0) and runs until FILE (--stop)
appears. --steps-per-epoch 0 and --batch-size 0 leave those members out.
"""
import argparse
import json
import os
import socket
import sys
import time


def now():
    return time.monotonic_ns()  # CLOCK_MONOTONIC: the dashboard's clock


class Job:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.seq = 0
        self.call_id = 0

    def send(self, obj, seq=True):
        if seq:
            obj["seq"] = self.seq
            self.seq += 1
        self.sock.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps-per-epoch", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--global-steps", action="store_true")
    ap.add_argument("--stop")
    a = ap.parse_args()

    job = Job(a.socket)
    run = {"type": "run", "version": 1, "ringside": "bridge", "bridge": "0.1.0",
           "host": socket.gethostname(), "backend": "pytorch-cpu", "device": "CPU", "arch": "",
           "devices": 1, "device_list": [0], "start_ns": now(), "start_wall_ns": time.time_ns(),
           "epochs": a.epochs, "chunk": 0, "name": "train_ddp", "pid": os.getpid(),
           "control": True, "config": {"script": "train_ddp.py", "torch": None},
           "rank": a.rank, "local_rank": a.rank, "world_size": a.world_size,
           "group_backend": "gloo"}
    if a.steps_per_epoch > 0:
        run["steps_per_epoch"] = a.steps_per_epoch
    if a.batch_size > 0:
        run["batch_size"] = a.batch_size
    job.send(run, seq=False)

    spe = a.steps_per_epoch if a.steps_per_epoch > 0 else 400
    epoch, done, loss = 1, 0, 1.0
    epoch_pos, step_pos = 0, -1  # what phases carry: the last rs.step's position
    cseq = 0
    times = []  # the last second's step ends, for steps_per_s
    while True:
        if a.stop and os.path.exists(a.stop):
            break
        if a.epochs > 0 and epoch > a.epochs:
            break
        t0 = now()
        for name, frac in (("forward", 0.35), ("backward", 0.4), ("optimizer", 0.15)):
            start = now()
            time.sleep(a.step_ms * frac / 1000.0)
            job.send({"type": "phase", "phase": name, "name": name, "dev": 0, "start_ns": start,
                      "end_ns": now(), "epoch": epoch_pos, "step": step_pos, "chunk": -1})
        cseq += 1
        job.call_id += 1
        start = now()
        job.send({"type": "call", "id": job.call_id, "dev": 0,
                  "call": "torch.distributed.all_reduce", "op": "device", "coll": "allreduce",
                  "group": 0, "cseq": cseq, "bytes": 4096, "phase": "allreduce",
                  "start_ns": start, "rank": a.rank, "thread": "MainThread"}, seq=False)
        time.sleep(a.step_ms * 0.05 / 1000.0 * (1 + a.rank))
        end = now()
        job.send({"type": "call", "id": job.call_id, "end": True, "start_ns": start,
                  "end_ns": end, "rc": 0}, seq=False)
        in_epoch = done % spe + 1
        step = done + 1 if a.global_steps else in_epoch
        job.send({"type": "collective", "dev": 0, "t_ns": end, "op": "allreduce", "calls": 1,
                  "bytes": 4096, "start_ns": start, "dur_ns": end - start, "max_ns": end - start,
                  "epoch": epoch, "step": step, "rc": 0, "cseq": cseq, "group": 0,
                  "name": "all_reduce"})
        start = now()
        time.sleep(a.step_ms * 0.05 / 1000.0)
        job.send({"type": "sync", "dev": 0, "op": "device", "start_ns": start,
                  "dur_ns": now() - start, "rc": 0})
        done += 1
        t = now()
        times = [x for x in times if t - x < 1000000000] + [t]
        span = (t - times[0]) / 1e9 if len(times) > 1 else (t - t0) / 1e9
        steps_per_s = (len(times) - 1) / span if len(times) > 1 and span > 0 else 1e9 / (t - t0)
        loss = loss * 0.995 + 0.001
        metric = {"type": "metric", "dev": 0, "t_ns": t, "epoch": epoch, "step": step,
                  "loss": loss, "steps_per_s": round(steps_per_s, 2)}
        if a.batch_size > 0:
            metric["samples_per_s"] = round(steps_per_s * a.batch_size, 1)
        job.send(metric)
        epoch_pos, step_pos = epoch, step
        if in_epoch == spe:
            epoch += 1
    job.send({"type": "summary", "state": "completed", "epochs": epoch_pos,
              "steps": max(step_pos, 0)}, seq=False)
    job.sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
