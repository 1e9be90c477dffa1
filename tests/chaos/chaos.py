#!/usr/bin/env python3
"""The fault matrix: every injected fault, every way to stop, 1 to 8 simulated devices, in
headless mode, under the dashboard (tmux) and in the agent. For each cell, ringside must
have left within its deadline plus 2 s with the documented status, named the stuck device
and call when it left one behind (status 3, with the hang bundle written), kept the last
good checkpoint readable, and (the dashboard) given the terminal back as it found it.

usage: chaos.py RINGSIDE SCRATCH [--slice full|ci] [--jobs N] [--devices 1,2,4,8]
                [--modes headless,dashboard,agent] [--backend cpu|hip] [--only REGEX]
                [--table FILE] [--load N]

Exit status 0 when every cell passed, 1 when one failed, 2 on a usage error. The summary
table (cells run and passed, the worst exit latency per stop) goes to stdout and --table.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

# The deadlines every cell runs with: short, so that the whole matrix fits in minutes.
SYNC_SLOW, SYNC_TIMEOUT, COMM_TIMEOUT, TEARDOWN_TIMEOUT = 0.3, 1.0, 2.0, 2.0
GRACE = 1.0  # the stop deadline's grace after its abort (STOP_DEADLINE_GRACE_NS)
SLACK = 2.0  # what a cell may take beyond its deadline
FINITE_HANG = 1.5  # a fault with no stop: a hang that ends by itself (within the way out's
# deadline, since the final checkpoint is on the way out)
FOREVER = 600

SYNC_PHASES = ["load", "vpoc", "features", "h2d", "cleanup", "forward", "backward",
               "optimizer", "eval", "checkpoint"]
GROUP_PHASES = ["comm-init", "allreduce", "barrier", "teardown"]
ROOT_ONLY = {"load", "features", "eval"}  # rank 0's work alone
STOPS = {
    "headless": ["none", "int", "int2", "term", "hup"],
    "dashboard": ["none", "q", "qq", "int", "int2", "term", "hup"],
    "agent": ["none", "int", "int2", "term"],  # no key, no stop on /control; HUP reopens its log
}
SIGS = {"int": signal.SIGINT, "term": signal.SIGTERM, "hup": signal.SIGHUP}


class Fault:
    """One injected fault: its --inject spec for a stop, what to wait for before stopping,
    and what kind of wait it makes (a call stuck for good, or a hold an abort ends)."""

    def __init__(self, name, kind, phase=None, dev=None):
        self.name, self.kind, self.phase, self.dev = name, kind, phase, dev

    def spec(self, stop):
        on = "" if self.dev is None else ":dev%d" % self.dev
        if self.kind == "drop":
            return "drop:dev%d" % self.dev
        if self.kind == "stall":
            return "stall:checkpoint:1"
        forever = stop != "none" or self.phase in ("teardown", "barrier")
        return "hang:%s:%g%s" % (self.phase, FOREVER if forever else FINITE_HANG, on)

    def trigger(self):
        """Text of the event that says the fault has begun."""
        if self.kind == "drop":
            return "leaves the run"
        if self.kind == "stall":
            return "blocks for good"
        if self.phase in GROUP_PHASES:
            return "holds back from"
        return "HANG (over"

    def stuck(self, stop):
        """Whether a call stays stuck for good (nothing can cancel it): the exit is then 3."""
        if self.kind == "stall":
            return True
        return self.kind == "hang" and self.phase not in GROUP_PHASES and stop != "none"


def faults(n_dev):
    """Every fault of the matrix at n_dev devices."""
    out = []
    last = n_dev - 1
    for p in SYNC_PHASES + (GROUP_PHASES if n_dev > 1 else []):
        if n_dev == 1:
            out.append(Fault("hang:%s" % p, "hang", p, None))
        elif p in ROOT_ONLY:
            out.append(Fault("hang:%s:dev0" % p, "hang", p, 0))
        else:
            out.append(Fault("hang:%s:dev%d" % (p, last), "hang", p, last))
            out.append(Fault("hang:%s:all" % p, "hang", p, None))
    if n_dev > 1:
        out.append(Fault("drop:dev%d" % last, "drop", None, last))
    out.append(Fault("stall:checkpoint:1", "stall", "checkpoint", None))
    return out


def expected(fault, stop):
    """(statuses allowed, deadline in seconds after the stop or, with none, the trigger)."""
    if stop == "int2":
        return {130}, 0.0
    if stop == "qq":
        return ({3} if fault.stuck(stop) else {0, 1, 3}), 0.0
    if stop == "none":
        if fault.kind == "stall":
            return {3}, TEARDOWN_TIMEOUT + GRACE
        if fault.kind == "drop":
            return {1}, COMM_TIMEOUT + TEARDOWN_TIMEOUT + GRACE
        return {0, 1}, FINITE_HANG + COMM_TIMEOUT + TEARDOWN_TIMEOUT + GRACE
    if fault.stuck(stop):
        return {3}, TEARDOWN_TIMEOUT + GRACE
    return {0, 1}, TEARDOWN_TIMEOUT + GRACE


class Env:
    def __init__(self, a):
        self.ringside = os.path.abspath(a.ringside)
        self.scratch = os.path.abspath(a.scratch)
        self.backend = a.backend
        self.seed_ckpt = None
        self.data = None


def run_args(env, n_dev, spec, out):
    args = ["--backend", env.backend, "--synthetic-days", "6", "--epochs", "1",
            "--telemetry", "none", "--no-kmsg", "--sync-slow", str(SYNC_SLOW),
            "--sync-timeout", str(SYNC_TIMEOUT), "--comm-timeout", str(COMM_TIMEOUT),
            "--teardown-timeout", str(TEARDOWN_TIMEOUT), "--output", out, "--inject", spec]
    if n_dev > 1:
        args += ["--devices", ",".join(str(k) for k in range(n_dev))]
    return args


def wait_until(pred, limit, step=0.02):
    """Poll pred until it is true or limit seconds pass; its last value."""
    end = time.monotonic() + limit
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def checkpoint_ok(env, out):
    """The checkpoint in out (the seeded good one, or one the cell wrote) reads back."""
    ck = os.path.join(out, "vpoc_mlp.rsmodel")
    if not os.path.exists(ck):
        return "no checkpoint in the output directory"
    r = subprocess.run([env.ringside, "predict", "--model", ck, "--data", env.data],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
    return "" if r.returncode == 0 else "checkpoint unreadable: " + r.stderr.strip()[:200]


class Cell:
    def __init__(self, mode, n_dev, fault, stop):
        self.mode, self.n_dev, self.fault, self.stop = mode, n_dev, fault, stop
        self.name = "%s/%ddev/%s/%s" % (mode, n_dev, fault.name, stop)
        self.status, self.latency, self.problems = None, None, []
        self.first_ended = False  # the first of two stops ended the process

    def dir(self, env):
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)
        return os.path.join(env.scratch, safe)

    def judge(self, env, out, text, t_stop, t_exit):
        allowed, deadline = expected(self.fault, self.stop)
        if self.first_ended:  # a loop that had ended already: the first stop left at once
            allowed, deadline = expected(self.fault, "int")
        self.latency = t_exit - t_stop
        if self.status not in allowed:
            self.problems.append("exit %s, expected %s" % (self.status, sorted(allowed)))
        if self.latency > deadline + SLACK:
            self.problems.append("left %.2f s after the %s, beyond %.1f + %.1f s" %
                                 (self.latency, "trigger" if self.stop == "none" else "stop",
                                  deadline, SLACK))
        if self.status == 3:  # the device that is stuck, else any that still waits
            dev = self.fault.dev if self.fault.dev is not None else 0
            named = ("leaving while dev %d:" % dev if self.fault.stuck(self.stop) else
                     "leaving while dev ")
            if named not in text:
                self.problems.append("status 3 without naming the stuck device (%r)" % named)
            if self.stop != "qq" and not any(f.startswith("hang-") for f in os.listdir(out)):
                self.problems.append("status 3 without a hang bundle")
        why = checkpoint_ok(env, out)
        if why:
            self.problems.append(why)

    def prepare(self, env):
        d = self.dir(env)
        shutil.rmtree(d, ignore_errors=True)
        out = os.path.join(d, "out")
        os.makedirs(out)
        for f in os.listdir(env.seed_ckpt):  # the last good checkpoint, from an earlier run
            if f.startswith("vpoc_mlp"):
                shutil.copy(os.path.join(env.seed_ckpt, f), out)
        return d, out

    def run(self, env):
        try:
            {"headless": self.run_headless, "dashboard": self.run_dashboard,
             "agent": self.run_agent}[self.mode](env)
        except ProcessLookupError:
            self.problems.append("ringside had exited before the stop (the fault never held it)")
        except Exception as ex:  # a harness error is this cell's failure, not the matrix's
            self.problems.append("harness: %r" % ex)
        return self

    # ---- headless and agent: a child process with its stderr in a file ----

    def _child(self, env, argv, d):
        err = open(os.path.join(d, "stderr"), "w")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, start_new_session=True)
        err.close()
        return p, os.path.join(d, "stderr")

    def _finish(self, p, limit):
        try:
            self.status = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            self.status = p.wait()
            self.problems.append("still running after %.0f s: killed" % limit)
        return time.monotonic()

    def _stop_child(self, p, errf):
        """The stop; its time (the last signal's)."""
        if self.stop == "none":
            return time.monotonic()
        sig = SIGS.get(self.stop, signal.SIGINT)
        os.kill(p.pid, sig)
        if self.stop != "int2":
            return time.monotonic()
        # the second only once the first has been taken: its handler says so at once
        if not wait_until(lambda: ": stopping" in read(errf) or p.poll() is not None, 10):
            self.problems.append("the first SIGINT was never said")
        if p.poll() is not None:
            self.first_ended = True
        else:
            os.kill(p.pid, signal.SIGINT)
        return time.monotonic()

    def run_headless(self, env):
        d, out = self.prepare(env)
        spec = self.fault.spec(self.stop)
        argv = [env.ringside, "train", "--headless", "--jsonl", os.devnull]
        p, errf = self._child(env, argv + run_args(env, self.n_dev, spec, out), d)
        trig = self.fault.trigger()
        if not wait_until(lambda: trig in read(errf) or p.poll() is not None, 60):
            self.problems.append("the fault never began (%r)" % trig)
        t_stop = self._stop_child(p, errf)
        t_exit = self._finish(p, 60)
        self.judge(env, out, read(errf), t_stop, t_exit)

    def run_agent(self, env):
        d, out = self.prepare(env)
        tok = os.path.join(d, "token")
        with open(tok, "w") as f:
            f.write("chaos-token-0123456789abcdef\n")
        os.chmod(tok, 0o600)
        spec = self.fault.spec(self.stop)
        argv = [env.ringside, "agent", "--train", "--listen", "127.0.0.1:0", "--allow-control",
                "--token-file", tok] + run_args(env, self.n_dev, spec, out)
        p, errf = self._child(env, argv, d)
        trig = self.fault.trigger()
        if not wait_until(lambda: trig in read(errf) or p.poll() is not None, 60):
            self.problems.append("the fault never began (%r)" % trig)
        t_stop = self._stop_child(p, errf)
        if self.stop == "none":
            # the agent serves on once its loop has ended; ended it must have, in time
            _, deadline = expected(self.fault, self.stop)
            ended = wait_until(lambda: p.poll() is not None or
                               re.search(r"(finished|stopped) after|training failed",
                                         read(errf)), deadline + SLACK + 1)
            if p.poll() is None:
                t_exit = time.monotonic()
                if not ended:
                    self.problems.append("the loop did not end")
                os.kill(p.pid, signal.SIGTERM)
                self._finish(p, 10)
                if self.status == 3 and self.fault.stuck(self.stop):
                    self.problems.append("a stuck call was left to the agent's SIGTERM")
                self.judge(env, out, read(errf), t_stop, t_exit)
                return
        t_exit = self._finish(p, 60)
        self.judge(env, out, read(errf), t_stop, t_exit)

    # ---- the dashboard in a tmux pane ----

    def run_dashboard(self, env):
        d, out = self.prepare(env)
        sock = "chaos-%d-%s" % (os.getpid(), os.path.basename(d))[:90]
        tm = ["tmux", "-L", sock, "-f", "/dev/null"]
        spec = self.fault.spec(self.stop)
        rec = os.path.join(d, "rec.jsonl")
        cmd = " ".join("'%s'" % a for a in [env.ringside] +
                       run_args(env, self.n_dev, spec, out) + ["--record", rec])
        script = ("stty -a > '{d}/before'; {cmd} < /dev/tty 2> '{d}/stderr' & echo $! > "
                  "'{d}/pid'; wait $!; rc=$?; stty -a > '{d}/after'; echo $rc > '{d}/rc'; sleep 600"
                  ).format(d=d, cmd=cmd)
        env_vars = dict(os.environ, TERM="xterm-256color")
        env_vars.pop("TMUX", None)
        subprocess.run(tm + ["new-session", "-d", "-x", "120", "-y", "40", "sh", "-c", script],
                       check=True, env=env_vars)
        try:
            self._dashboard_cell(env, d, out, tm, rec)
        finally:
            subprocess.run(tm + ["kill-server"], stderr=subprocess.DEVNULL)

    def _dashboard_cell(self, env, d, out, tm, rec):
        pidf, rcf = os.path.join(d, "pid"), os.path.join(d, "rc")
        if not wait_until(lambda: read(pidf).strip(), 30):
            self.problems.append("the dashboard never started")
            return
        pid = int(read(pidf))
        trig = self.fault.trigger()
        if not wait_until(lambda: trig in read(rec) or read(rcf), 60):
            self.problems.append("the fault never began (%r)" % trig)

        def screen():
            return subprocess.run(tm + ["capture-pane", "-p"], capture_output=True,
                                  text=True).stdout

        stop = self.stop
        if stop in ("q", "qq"):
            subprocess.run(tm + ["send-keys", "q"])
        elif stop in SIGS or stop == "int2":
            os.kill(pid, SIGS.get(stop, signal.SIGINT))
        if stop in ("qq", "int2"):  # the second once the first shows
            if not wait_until(lambda: "stopping" in screen() or read(rcf), 10):
                self.problems.append("the first stop never showed")
            if read(rcf).strip():
                self.first_ended = True
            elif stop == "qq":
                subprocess.run(tm + ["send-keys", "q"])
            else:
                os.kill(pid, signal.SIGINT)
        t_stop = time.monotonic()
        _, deadline = expected(self.fault, stop)
        t_exit = None
        if stop == "none":  # the dashboard stays once its loop has ended: q then leaves
            ended = wait_until(lambda: read(rcf).strip() or re.search(r"FINISHED|FAILED",
                                                                          screen()),
                               deadline + SLACK + 1, step=0.1)
            if not read(rcf).strip():
                t_exit = time.monotonic()
                if not ended:
                    self.problems.append("the loop did not end")
                subprocess.run(tm + ["send-keys", "q"])
                if self.fault.stuck(stop):
                    self.problems.append("a stuck call was left for q to end")
        if not wait_until(lambda: read(rcf).strip(), deadline + SLACK + 30):
            self.problems.append("still running: killed")
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: read(rcf).strip(), 10)
        t_exit = t_exit or time.monotonic()
        self.status = int(read(rcf).strip() or -1)
        wait_until(lambda: os.path.exists(os.path.join(d, "after")), 10)
        if read(os.path.join(d, "before")) != read(os.path.join(d, "after")):
            self.problems.append("the terminal's settings changed")
        self.judge(env, out, read(os.path.join(d, "stderr")), t_stop, t_exit)


def cells_for(slice_, modes, devices):
    out = []
    for mode in modes:
        counts = [n for n in devices if mode == "headless" or n <= 2]
        for n in counts:
            fs = faults(n)
            if slice_ == "full":
                out += [Cell(mode, n, f, s) for f in fs for s in STOPS[mode]]
                continue
            if n > 2:
                continue
            stops = STOPS[mode]
            if mode == "headless":  # every fault once, the stops in turn
                out += [Cell(mode, n, f, stops[k % len(stops)]) for k, f in enumerate(fs)]
            else:  # every stop once, the faults in turn
                step = max(1, len(fs) // len(stops))
                out += [Cell(mode, n, fs[(k * step + n) % len(fs)], s)
                        for k, s in enumerate(stops)]
    return out


def seed(env):
    """A good checkpoint to start every cell from, and data to read it back with."""
    d = os.path.join(env.scratch, "seed")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    r = subprocess.run([env.ringside, "train", "--headless", "--jsonl", os.devnull, "--backend",
                        env.backend, "--synthetic-days", "6", "--epochs", "1", "--telemetry",
                        "none", "--no-kmsg", "--output", d], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("chaos: the seed run failed: " + r.stderr)
    env.seed_ckpt = d
    env.data = os.path.join(env.scratch, "data.csv")
    subprocess.run([env.ringside, "synth", "--days", "3", "--out", env.data], check=True,
                   capture_output=True)


def burn(stop_evt):
    """One CPU-heavy process's worth of load until stop_evt."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    stop_evt.wait()
    p.kill()
    p.wait()


def table(cells, wall):
    rows = ["| stop | cells | passed | worst exit latency (s) | statuses |",
            "| --- | ---: | ---: | ---: | --- |"]
    for stop in ["none", "q", "qq", "int", "int2", "term", "hup"]:
        cs = [c for c in cells if c.stop == stop]
        if not cs:
            continue
        lat = max((c.latency for c in cs if c.latency is not None), default=0)
        st = {}
        for c in cs:
            st[c.status] = st.get(c.status, 0) + 1
        rows.append("| %s | %d | %d | %.2f | %s |" % (
            stop, len(cs), sum(1 for c in cs if not c.problems), lat,
            ", ".join("%s: %d" % (k, v) for k, v in sorted(st.items(), key=str))))
    modes = {}
    for c in cells:
        modes.setdefault((c.mode, c.n_dev), [0, 0])
        modes[(c.mode, c.n_dev)][0] += 1
        modes[(c.mode, c.n_dev)][1] += not c.problems
    rows.append("")
    rows.append("| mode | devices | cells | passed |")
    rows.append("| --- | ---: | ---: | ---: |")
    for (m, n), (k, ok) in sorted(modes.items()):
        rows.append("| %s | %d | %d | %d |" % (m, n, k, ok))
    passed = sum(1 for c in cells if not c.problems)
    rows.append("")
    rows.append("%d passed, %d failed (%d cells in %.0f s)" % (passed, len(cells) - passed,
                                                              len(cells), wall))
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ringside")
    ap.add_argument("scratch")
    ap.add_argument("--slice", choices=["full", "ci"], default="full")
    ap.add_argument("--jobs", type=int, default=4 * (os.cpu_count() or 2))
    ap.add_argument("--devices", default="1,2,4,8")
    ap.add_argument("--modes", default="headless,dashboard,agent")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--table", default="")
    ap.add_argument("--load", type=int, default=0, help="CPU-heavy processes beside the cells")
    a = ap.parse_args()
    env = Env(a)
    os.makedirs(env.scratch, exist_ok=True)
    modes = [m for m in a.modes.split(",") if m]
    if any(m not in STOPS for m in modes):
        ap.error("--modes: headless, dashboard, agent")
    if "dashboard" in modes and not shutil.which("tmux"):
        sys.exit("chaos: tmux is not installed (the dashboard's cells need it)")
    cells = cells_for(a.slice, modes, [int(x) for x in a.devices.split(",")])
    if a.only:
        cells = [c for c in cells if re.search(a.only, c.name)]
    if not cells:
        ap.error("no cell matches")
    seed(env)
    stop_evt = threading.Event()
    burners = [threading.Thread(target=burn, args=(stop_evt,)) for _ in range(a.load)]
    for b in burners:
        b.start()
    t0 = time.monotonic()
    failed = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for c in ex.map(lambda c: c.run(env), cells):
                if c.problems:
                    failed += 1
                    print("FAIL %s (exit %s, %.2f s): %s" % (c.name, c.status, c.latency or 0,
                                                              "; ".join(c.problems)), flush=True)
    finally:
        stop_evt.set()
        for b in burners:
            b.join()
    out = table(cells, time.monotonic() - t0)
    print(out)
    if a.table:
        with open(a.table, "w") as f:
            f.write(out + "\n")
    with open(os.path.join(env.scratch, "cells.json"), "w") as f:
        json.dump([{"cell": c.name, "status": c.status, "latency_s": c.latency,
                    "problems": c.problems} for c in cells], f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
