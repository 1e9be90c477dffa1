#!/usr/bin/env bash
# Benchmark (not a test): ringside's GPU kernels against PyTorch on the same GPU, in one run or
# several.
#
# usage: scripts/gpu-bench.sh BUILD_DIR [--quick] [--skip-compile] [--runs N]
#        scripts/gpu-bench.sh --from-raw RAW_FILE...
#
# Runs BUILD_DIR/tests/bench/bench_gpu and bench_tele (the NVML sampler's cost), then
# tests/bench/torch_ref.py (with $PYTHON, default python3; pynvml for its NVML reference), one
# after the other on the same device, and saves the outputs to a raw file, with the GPUs as
# nvidia-smi (or rocm-smi) reports them in '# machine:' lines before them, then two more rounds
# of the host copies alone (bench_gpu --only copies, torch_ref.py --only copies, in turn), whose
# best and worst the copy rows pool with the full runs'. It prints the GPU,
# its driver, memory and copy bandwidth, then a Markdown table: each comparison, the ratio (how
# many times faster ringside is: torch_ms / rs_ms for times, rs / torch for rates) and
# pass/fail against the goals.
#
# --runs N (default 1) runs the whole benchmark N times one after the other, run K's raw file
# BUILD_DIR/gpu-bench-raw-K.txt, the last also BUILD_DIR/gpu-bench-raw.txt; with N > 1 it
# prints a summary instead: each row's ratio over the runs (min / median / max, every round of
# every run pooled) and the runs it passed in; a goal is met only if it was met in every run.
# --quick asks both programs for fewer repetitions; --skip-compile leaves out torch.compile.
# --from-raw prints the table again from a saved raw file, or the summary from several, running
# nothing.
#
# Exit status: 0 when both programs ran, in every run (missed goals are in the table, not the
# status); 1 when either failed or is missing in any run (a single run's table then holds the
# other side's numbers alone and says why; the summary says which run); 2 on a usage error
# (one line on stderr).
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}

USAGE="${0##*/} BUILD_DIR [--quick] [--skip-compile] [--runs N], or ${0##*/} --from-raw RAW_FILE..."

# bad_usage TEXT: what is wrong and the usage, one line, and exit 2.
bad_usage() {
    echo "gpu-bench: $1 (usage: $USAGE)" >&2
    exit 2
}

# Print the tables from raw files: the key=value lines of both programs, the
# '# status: NAME rc=N reason=TEXT' lines this script writes after each and its '# machine:'
# lines. One file: its tables; several: the summary over them. Exit 0, or 1 when a side failed
# in any of them.
print_table() {
    "$PYTHON" - "$@" << 'PY'
import re
import sys

SESSIONS, BARS = 2520, 1380
TEXT_KEYS = {"rs_device", "rs_arch", "torch_device", "torch_version"}
KEY = re.compile(r"(rs|torch)_[A-Za-z0-9_]+")
MISMATCH = re.compile(r"rs_.*_mismatched_sessions")


class Missing(Exception):
    pass


def fmt(v):
    a = abs(v)
    if a >= 1e6:
        return f"{v:.3g}".replace("e+0", "e").replace("e+", "e")
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    return f"{v:.3g}"


def fmt_ratio(v):
    return f"{v:,.0f}x" if abs(v) >= 1000 else f"{v:.3g}x"


def med(v):
    return sorted(v)[len(v) // 2]


def gpu_line(text):
    """A '# machine:' line's GPU: name, driver, memory, clocks (None where not recorded)."""
    tool, _, rest = text.partition(": ")
    gpu = dict.fromkeys(("name", "driver", "memory", "clocks"))
    if tool == "nvidia-smi":  # name, driver_version, memory.total, clocks.max.sm, clocks.max.mem
        f = [x.strip() for x in rest.rsplit(",", 4)]
        if len(f) == 5:
            gpu.update(name=f[0], driver=f[1], memory=f[2], clocks=f"SM {f[3]}, memory {f[4]}")
            return gpu
    m = re.search(r"card series:\s*(.*)$", rest, re.I)  # rocm-smi --showproductname
    gpu["name"] = (m.group(1) if m else rest).strip() or None
    return gpu


class Run:
    """One raw file: the key=value lines of the programs, the '# status: NAME rc=N reason=TEXT'
    line written after each and the '# machine: TOOL: TEXT' lines written before them."""

    def __init__(self, path):
        self.path, self.vals, self.status, self.machine = path, {}, {}, []
        self.every = {}  # key: each value it was given, in order (copy rounds repeat keys)
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                self.take(line.rstrip("\n"))
        self.rs_ok, self.rs_why = self.side("rs_", "bench_gpu")
        self.t_ok, self.t_why = self.side("torch_", "torch_ref")

    def take(self, line):
        m = re.match(r"^# status: (\S+) rc=(-?\d+)(?: reason=(.*))?$", line)
        if m:
            self.status[m.group(1)] = (int(m.group(2)), m.group(3) or "")
        elif line.startswith("# machine: "):
            self.machine.append(gpu_line(line[len("# machine: "):]))
        elif not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            if KEY.fullmatch(k):
                self.vals[k] = v.strip()
                self.every.setdefault(k, []).append(v.strip())

    def num(self, key):
        if key not in self.vals:
            raise Missing(f"missing {key}")
        try:
            return float(self.vals[key])
        except ValueError:
            raise Missing(f"bad {key}={self.vals[key]}") from None

    def ok(self, key):
        return self.why(key) is None

    def why(self, key):
        try:
            self.num(key)
            return None
        except Missing as e:
            return e

    def rounds(self, key):
        """The per-round values of key_runs, or the single key as one round."""
        if key + "_runs" in self.vals:
            try:
                return [float(x) for x in self.vals[key + "_runs"].split(",") if x.strip()]
            except ValueError:
                raise Missing(f"bad {key}_runs={self.vals[key + '_runs']}") from None
        return [self.num(key)]

    def pooled(self, key, fn):
        """fn (max or min) over every value key was given, and how many there were."""
        v = []
        for x in self.every.get(key, []):
            try:
                v.append(float(x))
            except ValueError:
                raise Missing(f"bad {key}={x}") from None
        if not v:
            raise Missing(f"missing {key}")
        return fn(v), len(v)

    def has(self, prefix):
        return any(k.startswith(prefix) for k in self.vals)

    def side(self, prefix, name):
        """(ran, reason): a side ran when it exited 0, or without a status line but with keys."""
        rc, reason = self.status.get(name, (0 if self.has(prefix) else None, ""))
        for extra, (xrc, xreason) in self.status.items():  # its later rounds ("NAME-copies-2")
            if rc == 0 and extra.startswith(name + "-") and xrc != 0:
                rc, reason, name = xrc, xreason, extra
        if rc is None:
            return False, f"no {name} output in {self.path}"
        if rc != 0:
            return False, f"{name} exited {rc}" + (f": {reason}" if reason else "")
        if not self.has(prefix):
            return False, f"{name} printed no {prefix}* keys"
        return True, ""

    def gpu(self):
        """The recorded GPU bench_gpu names (the first recorded where none matches); {} when
        none was recorded."""
        named = [g for g in self.machine if g["name"] == self.vals.get("rs_device")]
        return (named or self.machine or [{}])[0]

    def problems(self):
        return [why for ok, why in ((self.rs_ok, self.rs_why), (self.t_ok, self.t_why)) if not ok]


class Out:
    """One row in one run: the cells of its line in the run's table; met: True, False, or None
    when not measured; the ratios (one a round) and the two sides' figures; why it was not
    measured; how it passed when not plainly; detail: the row's own figures."""

    def __init__(self, cells, met=None, ratios=(), rs=(), ref=(), why="", how="", detail=None):
        self.cells, self.met, self.why, self.how, self.detail = cells, met, why, how, detail
        self.ratios, self.rs, self.ref = list(ratios), list(rs), list(ref)


class Row:
    """A row of the tables: evaluate(run) gives its Out, or None when it has nothing to show in
    that run; summary(outs) its line over several runs. goal is None on a row without one."""

    section = "cmp"
    goal = None
    note = "-"
    unit = ""
    ref_name = None
    fmt_sample = staticmethod(fmt_ratio)

    def goal_txt(self):
        return "-"

    def na_result(self):
        return "n/a" if self.goal is not None else self.note

    def summary(self, outs):
        """The row over the runs: both sides' medians, the min / median / max of the ratios of
        every round of every run, the runs it passed in and the result."""
        return (self.name, self.median_txt(outs, "rs"), self.median_txt(outs, "ref", self.ref_name),
                self.spread_txt(outs), self.goal_txt(), *self.verdict(outs))

    def median_txt(self, outs, side, name=None):
        v = [x for o in outs for x in getattr(o, side)]
        return f"{fmt(med(v))} {self.unit}".rstrip() + (f" ({name})" if name else "") if v else ""

    def spread_txt(self, outs):
        v = [x for o in outs for x in o.ratios]
        if not v:
            return f"n/a ({next((o.why for o in outs if o.why), 'not measured')})"
        return " / ".join(self.fmt_sample(f(v)) for f in (min, med, max))

    @staticmethod
    def met_all(outs):
        """True when it passed in every run, False when it failed in one, else None."""
        if any(o.met is False for o in outs):
            return False
        return True if all(o.met for o in outs) else None

    def verdict(self, outs):
        """(passed, result): the runs it passed in, and pass only if it passed in every one."""
        if self.goal is None:
            return "-", self.note
        n, k = len(outs), sum(1 for o in outs if o.met)
        met = self.met_all(outs)
        if met is None:
            return f"{k} of {n} runs", f"n/a (not measured in {n - k})"
        how = [o.how for o in outs if o.met and o.how]
        note = f" ({len(how)} of {n} runs {how[0]})" if how else ""
        return f"{k} of {n} runs", ("pass" if met else "**FAIL**") + note


class Ratio(Row):
    """ringside against a reference: faster 'time' (ratio ref / rs) or 'rate' (rs / ref).
    rounds: the KEY_runs lists paired round by round (as many as the shorter side has; a side
    with one value pairs it with every round of the other): the spread, and pass only if every
    round meets the goal. rs_conv turns the ringside figure into the reference's unit; optional:
    the row only where the reference key is present."""

    def __init__(self, label, rs, ref, unit, faster, goal=None, note="-", rounds=False,
                 rs_conv=None, ref_name=None, optional=False):
        self.label = self.name = label
        self.rs, self.ref, self.unit, self.faster = rs, ref, unit, faster
        self.goal, self.note, self.rounds = goal, note, rounds
        self.rs_conv, self.ref_name, self.optional = rs_conv, ref_name, optional

    def goal_txt(self):
        return f">= {self.goal:g}x" if self.goal is not None else "-"

    def values(self, run, key, conv=None):
        """(values, error) of one side."""
        try:
            v = run.rounds(key) if self.rounds else [run.num(key)]
        except Missing as e:
            return [], e
        return [conv(x) for x in v] if conv else v, None

    def side_txt(self, run, key, values, name=None):
        if not values:
            return ""
        return f"{fmt(med(values))} {self.unit}" + (f" ({name})" if name else "")

    def evaluate(self, run):
        if self.optional and self.ref not in run.vals:
            return None
        r, er = self.values(run, self.rs, self.rs_conv)
        t, et = self.values(run, self.ref)
        cols = (self.label, self.side_txt(run, self.rs, r),
                self.side_txt(run, self.ref, t, self.ref_name))
        why = "; ".join(str(e) for e in (er, et) if e)
        pairs = [] if why else self.pair(r, t)
        if not why and not pairs:
            why = "non-positive value"
        if why:
            return Out(cols + (f"n/a ({why})", self.goal_txt(), self.na_result()),
                       rs=r, ref=t, why=why)
        ratios = [b / a if self.faster == "time" else a / b for a, b in pairs]
        met, result, how = self.judge(run, min(ratios))
        return Out(cols + (self.ratio_txt(ratios), self.goal_txt(), result), met, ratios, r, t,
                   how=how)

    @staticmethod
    def pair(r, t):
        if len(r) == 1:
            r = r * len(t)
        if len(t) == 1:
            t = t * len(r)
        return [(a, b) for a, b in zip(r, t) if a > 0 and b > 0]

    def judge(self, run, low):
        """(met, result, how) for the lowest ratio."""
        if self.goal is None:
            return None, self.note, ""
        met = low >= self.goal
        return met, "pass" if met else "**FAIL**", ""

    def ratio_txt(self, ratios):
        ratios = sorted(ratios)
        if not self.rounds or len(ratios) == 1:
            return fmt_ratio(ratios[0])
        return f"{fmt_ratio(ratios[0])} to {fmt_ratio(ratios[-1])} over {len(ratios)} rounds"


class Copy(Ratio):
    """The doctor's copy figure against PyTorch's, each side the best of every copy it timed in
    the run (5 a round; the programs' full runs and the copy rounds after them, taken in turn,
    so that a host whose copies speed up or slow down over the run moves both): at least 0.9x,
    or else within the doctor's own spread (the ratio at least its worst / best over the same
    copies, from the _worst_ keys). Each side's spread beside its figure where it printed its
    worst, with the rounds where there were several."""

    def __init__(self, label, rs, ref):
        super().__init__(label, rs, ref, "GB/s", "rate", goal=0.9)

    @staticmethod
    def worst(key):
        return key[:-len("_GBps")] + "_worst_GBps"

    def values(self, run, key, conv=None):
        try:
            return [run.pooled(key, max)[0]], None
        except Missing as e:
            return [], e

    def side_txt(self, run, key, values, name=None):
        txt = super().side_txt(run, key, values, name)
        if txt and run.ok(self.worst(key)):
            worst, n = run.pooled(self.worst(key), min)
            rounds = f", {n} rounds" if n > 1 else ""
            txt += f" (spread {fmt(worst)}-{fmt(values[0])}{rounds})"
        return txt

    def spread(self, run):
        """The doctor's worst / best, or None without its worst."""
        best = run.pooled(self.rs, max)[0] if run.ok(self.rs) else 0
        if run.ok(self.worst(self.rs)) and best > 0:
            return run.pooled(self.worst(self.rs), min)[0] / best
        return None

    def judge(self, run, low):
        met, result, how = super().judge(run, low)
        spread = self.spread(run)
        if met or spread is None:
            return met, result, how
        if low >= spread:
            return (True, f"pass (within the doctor's spread, {spread:.2f})",
                    "within the doctor's spread")
        return False, f"**FAIL** (the doctor's spread {spread:.2f})", ""


class Clean(Row):
    """Correctness: every rs_*_mismatched_sessions key (the sessions whose POC or value area
    differs from the CPU's) 0; n/a where there is none."""

    def __init__(self):
        self.label = self.name = "correctness: every rs_*_mismatched_sessions is 0"
        self.goal = 0

    def goal_txt(self):
        return "0 each"

    @staticmethod
    def count(v):
        try:
            return float(v)
        except ValueError:
            return None

    def evaluate(self, run):
        keys = {k: v for k, v in sorted(run.vals.items()) if MISMATCH.fullmatch(k)}
        counts = [self.count(v) for v in keys.values()]
        why = ("no rs_*_mismatched_sessions keys" if not keys else
               "a count is not a number" if None in counts else "")
        met = (False if any(c for c in counts if c is not None) else
               None if why else True)
        result = "n/a" if met is None else "pass" if met else "**FAIL**"
        txt = ", ".join(f"{k}={v}" for k, v in keys.items())
        ratio = f"n/a ({why})" if why and met is None else "-"
        return Out((self.label, txt, "-", ratio, self.goal_txt(), result), met, why=why,
                   detail=keys)

    def most(self, values):
        """The largest count, or the first that is not a number."""
        bad = [v for v in values if self.count(v) is None]
        return bad[0] if bad else max(values, key=self.count)

    def summary(self, outs):
        """Each key with the most sessions it had mismatched in a run."""
        seen = {}
        for o in outs:
            for k, v in o.detail.items():
                seen.setdefault(k, []).append(v)
        txt = ", ".join(f"{k}={self.most(v)}" for k, v in seen.items())
        why = next((o.why for o in outs if o.why), "")
        na = f"n/a ({why})" if why and self.met_all(outs) is None else "-"
        return (self.name, txt + " (the most in a run)" if txt else "", "-", na, self.goal_txt(),
                *self.verdict(outs))


class AtMost(Row):
    """An absolute goal: key at most `goal`; ref (may be missing) shown beside it."""

    def fmt_sample(self, v):
        return f"{fmt(v)} {self.unit}"

    def __init__(self, label, key, ref, unit, most):
        self.label = self.name = label
        self.key, self.ref, self.unit, self.goal = key, ref, unit, most

    def goal_txt(self):
        return f"<= {self.goal:g} {self.unit}"

    def evaluate(self, run):
        refv = [run.num(self.ref)] if run.ok(self.ref) else []
        ref = f"{fmt(refv[0])} {self.unit}" if refv else "n/a"
        if not run.ok(self.key):
            why = str(run.why(self.key))
            return Out((self.label, "", ref, f"n/a ({why})", self.goal_txt(), "n/a"), ref=refv,
                       why=why)
        v = run.num(self.key)
        met = v <= self.goal
        ratio = fmt_ratio(refv[0] / v) if refv and v > 0 else "-"
        return Out((self.label, f"{fmt(v)} {self.unit}", ref, ratio, self.goal_txt(),
                    "pass" if met else "**FAIL**"), met, [v], [v], refv)


class Bandwidth(Row):
    """Bytes a batched kernel reads over its time, against the device copy (ringside's, and
    torch's beside it); goal: a share of ringside's copy."""

    section = "bw"
    unit = "TB/s"
    ref_name = "ringside's device copy"

    @staticmethod
    def fmt_sample(v):
        return f"{v * 100:.0f}%"

    def __init__(self, prof, goal=None):
        self.prof, self.goal = prof, goal
        self.label = f"VPOC {prof}, batched kernel"
        self.name = self.label + " bandwidth"

    def goal_txt(self):
        return f">= {self.goal * 100:.0f}% of copy" if self.goal is not None else "-"

    def na(self, why):
        return Out((self.label, "", "", f"n/a ({why})", "", self.goal_txt(), self.na_result()),
                   why=str(why))

    def evaluate(self, run):
        try:
            bytes_ = run.num(f"rs_vpoc_{self.prof}_bytes")
            ms = run.num(f"rs_vpoc_{self.prof}_ms")
            if ms <= 0:
                raise Missing(f"bad rs_vpoc_{self.prof}_ms")
        except Missing as e:
            return self.na(e)
        tbps = bytes_ / (ms * 1e-3) / 1e12
        copy = [run.num(k) if run.ok(k) and run.num(k) > 0 else None
                for k in ("rs_d2d_copy_TBps", "torch_d2d_copy_TBps")]
        fr = [tbps / c if c else None for c in copy]
        txt = " / ".join(f"{f * 100:.0f}%" if f is not None else "n/a" for f in fr)
        met = None if fr[0] is None or self.goal is None else fr[0] >= self.goal
        result = ("-" if self.goal is None else "n/a" if met is None else
                  "pass" if met else "**FAIL**")
        cells = (self.label, f"{fmt(ms)} ms", f"{fmt(bytes_ / 1e6)} MB", f"{tbps:.3g} TB/s", txt,
                 self.goal_txt(), result)
        return Out(cells, met, [fr[0]] if fr[0] is not None else [], [tbps],
                   [copy[0]] if copy[0] else [], why="" if copy[0] else "no rs_d2d_copy_TBps")


class Record(Row):
    """A figure for the record: its value (over several runs, every round's)."""

    section = "rec"
    note = "for the record"

    def fmt_sample(self, v):
        return f"{fmt(v)} {self.unit}"

    def __init__(self, key, unit, what):
        self.label, self.name = key, f"{key} ({what})"
        self.key, self.unit, self.what = key, unit, what

    def evaluate(self, run):
        if not run.ok(self.key):
            return Out((self.key, "n/a (missing)"), why=str(run.why(self.key)))
        v = run.num(self.key)
        try:
            rounds = run.rounds(self.key)
        except Missing:
            rounds = [v]
        return Out((self.key, f"{fmt(v)} {self.unit} ({self.what})"), ratios=rounds, rs=rounds)


def mlp_rows():
    for hid in ("32_16", "128_64"):
        for bs in (256, 4096):
            sfx = f"h{hid}_b{bs}"
            first = hid == "32_16" and bs == 256
            rk = f"rs_mlp_steps_per_s_{sfx}"
            name = f"MLP {hid.replace('_', ',')} b{bs}"
            yield Ratio(f"{name} vs eager", rk, f"torch_mlp_eager_steps_per_s_{sfx}", "steps/s",
                        "rate", goal=20 if first else None)
            yield Ratio(f"{name} vs CUDA graph", rk, f"torch_mlp_graph_steps_per_s_{sfx}",
                        "steps/s", "rate", goal=2.2)
            if first:
                yield Ratio(f"{name} vs torch.compile", rk,
                            f"torch_mlp_compiled_steps_per_s_{sfx}", "steps/s", "rate")
            yield Ratio(f"{name} vs eager, fused Adam", rk,
                        f"torch_mlp_eager_fused_steps_per_s_{sfx}", "steps/s", "rate",
                        optional=True)
    for peer in ("eager", "graph"):
        yield Ratio(f"MLP 32,16 b256, 5 timing events/step, vs "
                    f"{'CUDA graph' if peer == 'graph' else peer}",
                    "rs_mlp_timed_steps_per_s_h32_16_b256",
                    f"torch_mlp_{peer}_steps_per_s_h32_16_b256", "steps/s", "rate")


def bars_per_s(ms):
    return SESSIONS * BARS / (ms * 1e-3) if ms > 0 else 0.0


ROWS = [
    # every session's POC and value area as the CPU finds them
    Clean(),
    # VPOC: the batched kernel (every session whole, one launch) and the training loop's path
    # (compute_vpoc_set, one launch a 500-bar chunk across every session; the same path the
    # dashboard, `ringside vpoc` and the doctor take).
    Ratio("VPOC loop path, chunk 500, vs torch.compile (fixed bins)",
          "rs_vpoc_loop_chunk500_ms", "torch_vpoc_compiled_ms", "ms", "time", goal=4,
          rounds=True),
    Ratio("VPOC loop path, chunk 500, vs the batched kernel (at most 2x its time)",
          "rs_vpoc_loop_chunk500_ms", "rs_vpoc_close_ms", "ms", "time", goal=0.5, rounds=True,
          ref_name="ringside batched"),
    Ratio("VPOC batched kernel vs torch vectorised bincount", "rs_vpoc_close_ms",
          "torch_vpoc_vectorised_ms", "ms", "time", goal=5, rounds=True),
    Ratio("VPOC batched kernel vs torch.compile (fixed bins)", "rs_vpoc_close_ms",
          "torch_vpoc_compiled_ms", "ms", "time", goal=2, rounds=True),
    Ratio("VPOC batched kernel vs torch index_add, fixed bins", "rs_vpoc_close_ms",
          "torch_vpoc_indexadd_ms", "ms", "time"),
    Ratio("VPOC batched kernel vs seed per-bar loop (bars/s)", "rs_vpoc_close_ms",
          "torch_vpoc_seed_loop_bars_per_s", "bars/s", "rate", note="for the record",
          rs_conv=bars_per_s),
    # ringside's dense kernel path (chunks of 125 bars) beside the packed one and PyTorch's
    # per-chunk forms, for the record
    *(Ratio(f"VPOC dense path, chunk 125, vs {name}", "rs_vpoc_dense_chunk125_ms", ref, "ms",
            "time", note="for the record", rounds=True, ref_name=ref_name)
      for name, ref, ref_name in (
          ("the packed loop path at chunk 500", "rs_vpoc_loop_chunk500_ms", "ringside packed"),
          ("torch one-hot per chunk", "torch_vpoc_onehot_chunk125_ms", None),
          ("torch scatter per chunk", "torch_vpoc_scatter_chunk125_ms", None))),
    *mlp_rows(),
    # Sync and copy
    Ratio("empty sync", "rs_empty_sync_us", "torch_empty_sync_us", "us", "time"),
    Ratio("d2d copy 2^28 floats (same GPU check, ~1x)", "rs_d2d_copy_TBps",
          "torch_d2d_copy_TBps", "TB/s", "rate"),
    # The doctor's copy figures (its own measurement, 256 MiB, best of 5 a round, three rounds)
    # beside PyTorch's copies of the same size in the same run, taken in turn: the doctor must
    # print what a loader gets (goal: within 10%, or within the doctor's own spread).
    *(Copy(f"doctor's copy figure, {wname}, {mem}", f"rs_copy_{way}_{mem}_GBps",
           f"torch_copy_{way}_{mem}_GBps")
      for way, wname in (("h2d", "host to device"), ("d2h", "device to host"))
      for mem in ("pinned", "pageable")),
    AtMost("NVML telemetry sample, per GPU (PyTorch column: pynvml's calls for the same "
           "fields)", "rs_tele_nvml_per_gpu_us", "torch_pynvml_per_gpu_us", "us", 50),
    # Bandwidth: bytes the kernels read over their time, against the copy ceiling (goal: the
    # close profile's batched kernel at 60% of ringside's own device copy or more).
    Bandwidth("close", 0.60),
    Bandwidth("range"),
    Record("rs_vpoc_loop_chunk500_wall_ms", "ms",
           "a whole pass as the loop waits for it: launches, sync, results"),
]

SECTIONS = (
    ("cmp", "Comparisons (ratio = times faster ringside is)",
     ["comparison", "ringside", "PyTorch", "ratio", "goal", "result"]),
    ("bw", "VPOC achieved bandwidth (bytes read: 8-byte packed bars, offsets, session table; "
     "copy counts read + write)",
     ["kernel", "time", "bytes read", "achieved", "of copy (ringside / torch)", "goal",
      "result"]),
    ("rec", "For the record", ["figure", "value"]),
)


def print_rows(title, header, body):
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] * len(header)) + "|")
    for r in body:
        print("| " + " | ".join(str(c) for c in r) + " |")


def print_goals(goals, lead):
    """goals: (name, met) with met None when not measured."""
    met = sum(1 for g in goals if g[1])
    na = [g[0] for g in goals if g[1] is None]
    print(f"\n{lead}: {met} of {len(goals)}" +
          (f" ({len(na)} not measured: {'; '.join(na)})" if na else ""))


NOT_RECORDED = "(not recorded)"


def spread_txt(values, unit):
    """The median of one figure over the runs, and its range when there are several."""
    if not values:
        return NOT_RECORDED
    txt = f"{fmt(med(values))} {unit}"
    if len(values) > 1:
        txt += f" ({fmt(min(values))} to {fmt(max(values))} over {len(values)} runs)"
    return txt


def machine_of(run):
    return run.vals.get("rs_device") or run.gpu().get("name"), run.gpu().get("driver")


def machine_lines(runs):
    """The GPU, its driver, memory and clocks as the vendor's tool reported them (the first
    run that recorded them), the device copy bandwidth both sides measured, and the runs on
    another GPU or driver than the first."""
    first = next((r for r in runs if r.machine), runs[0])
    v, gpu = runs[0].vals, first.gpu()
    name = v.get("rs_device") or gpu.get("name") or NOT_RECORDED
    arch = f" ({v['rs_arch']})" if "rs_arch" in v else ""
    count = f"; {len(first.machine)} GPUs on the host" if len(first.machine) > 1 else ""
    clocks = f"; clocks at most {gpu['clocks']}" if gpu.get("clocks") else ""
    copy = [spread_txt([r.num(k) for r in runs if r.ok(k)], "TB/s")
            for k in ("rs_d2d_copy_TBps", "torch_d2d_copy_TBps")]
    lines = [f"GPU: {name}{arch}{count}", f"driver: {gpu.get('driver') or NOT_RECORDED}",
             f"memory: {gpu.get('memory') or NOT_RECORDED}{clocks}",
             f"HBM copy bandwidth (device to device, read + write): ringside {copy[0]}, "
             f"PyTorch {copy[1]}",
             f"PyTorch: {v.get('torch_device', '?')}, torch {v.get('torch_version', '?')}"]
    ref = (machine_of(runs[0])[0], machine_of(first)[1])
    for k, r in enumerate(runs, 1):
        if any(a and b and a != b for a, b in zip(machine_of(r), ref)):
            name, driver = machine_of(r)
            lines.append(f"**warning: run {k} was on another GPU or driver: {name}, driver "
                         f"{driver or NOT_RECORDED}**")
    return lines


def device_warnings(runs):
    for r in runs:
        d = (r.vals.get("rs_device"), r.vals.get("torch_device"))
        if None not in d and d[0] != d[1]:
            yield (f"**warning: the two report different devices in {r.path}; the ratios "
                   "compare different GPUs**")


def print_head(run):
    print("## ringside GPU kernels vs PyTorch\n")
    for line in [*machine_lines([run]), *device_warnings([run]), f"raw output: {run.path}"]:
        print(f"- {line}")
    for why in run.problems():
        print(f"- **{why}**")


def print_alone(run):
    """One side has nothing: the other's numbers alone."""
    for prefix, title, ok in (("rs_", "ringside alone (no PyTorch reference)", run.has("rs_")),
                              ("torch_", "PyTorch alone (no ringside figures)",
                               run.has("torch_"))):
        if ok:
            body = [(k, run.vals[k]) for k in sorted(run.vals)
                    if k.startswith(prefix) and k not in TEXT_KEYS]
            print_rows(title, ["key", "value"], body)
            return
    print("\nneither side printed any figures")


def print_run(run):
    """The tables of one run: 0, or 1 when a side failed."""
    print_head(run)
    if not (run.rs_ok or run.has("rs_")) or not (run.t_ok or run.has("torch_")):
        print_alone(run)
        return 1
    outs = [(row, row.evaluate(run)) for row in ROWS]
    outs = [(row, o) for row, o in outs if o is not None]
    for sec, title, header in SECTIONS:
        print_rows(title, header, [o.cells for row, o in outs if row.section == sec])
    print_goals([(row.name, o.met) for row, o in outs if row.goal is not None], "goals met")
    for why in run.problems():
        print(f"incomplete: {why}")
    return 0 if run.rs_ok and run.t_ok else 1


SUMMARY_HEADER = ["comparison", "ringside (median)", "PyTorch (median)",
                  "ratio (or figure): min / median / max", "goal", "passed in", "result"]


def print_summary(runs):
    """The summary over several runs: 0, or 1 when a side failed in any of them."""
    n = len(runs)
    print(f"## ringside GPU kernels vs PyTorch, {n} runs\n")
    lines = [*machine_lines(runs), *device_warnings(runs),
             "raw output: " + ", ".join(r.path for r in runs)]
    lines += [f"**run {k}: {why}**" for k, r in enumerate(runs, 1) for why in r.problems()]
    for line in lines:
        print(f"- {line}")
    body, goals = [], []
    for row in ROWS:
        outs = [o for o in (row.evaluate(r) for r in runs) if o is not None]
        if outs:
            body.append(row.summary(outs))
        if outs and row.goal is not None:
            goals.append((row.name, row.met_all(outs)))
    print_rows(f"Over {n} runs (ratio = times faster ringside is; every round of every run "
               "pooled; a row passes only if it passed in every run)", SUMMARY_HEADER, body)
    print_goals(goals, "goals met in every run")
    for k, r in enumerate(runs, 1):
        for why in r.problems():
            print(f"incomplete: run {k}: {why}")
    return 0 if all(r.rs_ok and r.t_ok for r in runs) else 1


RUNS = [Run(path) for path in sys.argv[1:]]
sys.exit(print_run(RUNS[0]) if len(RUNS) == 1 else print_summary(RUNS))
PY
}

# record_machine RAW: the host's GPUs as the vendor's tool reports them, one
# '# machine: TOOL: ...' line a GPU: nvidia-smi's name, driver, memory and highest clocks, or
# rocm-smi's product name; nothing where neither is installed or it fails.
record_machine() {
    local out
    if command -v nvidia-smi > /dev/null 2>&1; then
        out=$(timeout 60 nvidia-smi \
            --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
            --format=csv,noheader) &&
            printf '%s\n' "$out" | tr -d '\r' | sed -n 's/^\(..*\)$/# machine: nvidia-smi: \1/p'
    elif command -v rocm-smi > /dev/null 2>&1; then
        out=$(timeout 60 rocm-smi --showproductname) &&
            printf '%s\n' "$out" | tr -d '\r' | grep -i 'card series' |
            sed 's/^/# machine: rocm-smi: /'
    fi >> "$1" 2> /dev/null
    return 0
}

BENCH_NAME=gpu-bench
COPY_ROUNDS=2 # host-copy rounds after each run's full programs (copy_rounds)
# shellcheck source=scripts/bench-lib.sh
. "$top/scripts/bench-lib.sh"

# side_bench_gpu RAW: bench_gpu's output and status appended to RAW.
side_bench_gpu() {
    local bench="$build/tests/bench/bench_gpu"
    if [ -x "$bench" ]; then
        run bench_gpu "$tmp/rs" "$bench" "${rs_quick[@]}"
    else
        echo "$bench not found or not executable (is the GPU backend built?)" > "$tmp/rs.err"
        : > "$tmp/rs"
        RC=127
    fi
    append_output "$1" bench_gpu "$tmp/rs"
}

# side_bench_tele RAW: the telemetry sampler's cost on this machine's GPUs (the NVML provider
# alone), appended to RAW.
side_bench_tele() {
    local tele="$build/tests/bench/bench_tele" per
    if [ -x "$tele" ]; then
        run bench_tele "$tmp/tele" "$tele" 500 nvml
        per=$(sed -n 's/^provider=nvml status=ok .*per_gpu_us=\([0-9.]*\).*/\1/p' "$tmp/tele" |
            tail -n 1)
        [ -z "$per" ] || echo "rs_tele_nvml_per_gpu_us=$per" >> "$tmp/tele"
    else
        echo "$tele not found" > "$tmp/tele.err"
        : > "$tmp/tele"
        RC=127
    fi
    append_output "$1" bench_tele "$tmp/tele"
}

# bench_once RAW K: run K of the benchmark, the three programs one after the other, into RAW.
bench_once() {
    {
        echo "# gpu-bench raw output, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname)," \
            "run $2 of $runs"
        echo "# CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}" \
            "HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES-unset}"
    } > "$1"
    record_machine "$1"
    side_bench_gpu "$1"
    side_bench_tele "$1"
    run torch_ref "$tmp/torch" "$PYTHON" "$top/tests/bench/torch_ref.py" "${quick[@]}" "${skip[@]}"
    append_output "$1" torch_ref "$tmp/torch"
    copy_rounds "$1"
}

# copy_rounds RAW: COPY_ROUNDS more rounds of the host copies alone, the doctor's then
# PyTorch's, into RAW: the copy rows take each side's best and worst over all its rounds.
copy_rounds() {
    local k
    for k in $(seq 2 $((COPY_ROUNDS + 1))); do
        [ -x "$build/tests/bench/bench_gpu" ] || break
        run "bench_gpu-copies-$k" "$tmp/rs" "$build/tests/bench/bench_gpu" --only copies
        append_output "$1" "bench_gpu-copies-$k" "$tmp/rs"
        run "torch_ref-copies-$k" "$tmp/torch" "$PYTHON" "$top/tests/bench/torch_ref.py" \
            --only copies
        append_output "$1" "torch_ref-copies-$k" "$tmp/torch"
    done
}

[ $# -ge 1 ] || bad_usage "no build directory"
if [ "$1" = "--from-raw" ]; then
    shift
    [ $# -ge 1 ] || bad_usage "--from-raw needs one or more raw files"
    for f in "$@"; do
        if [ ! -f "$f" ] || [ ! -r "$f" ]; then
            echo "gpu-bench: cannot read $f" >&2
            exit 2
        fi
    done
    print_table "$@"
    exit $?
fi
case "$1" in -*) bad_usage "the build directory comes first, not $1" ;; esac

build=$1
shift
quick=()
skip=()
runs=1
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=(--quick) ;;
    --skip-compile) skip=(--skip-compile) ;;
    --runs) [ $# -ge 2 ] || bad_usage "--runs needs a number"; runs=$2; shift ;;
    --runs=*) runs=${1#--runs=} ;;
    *) bad_usage "unknown option $1" ;;
    esac
    shift
done
[[ $runs =~ ^[1-9][0-9]{0,2}$ ]] ||
    bad_usage "--runs takes a whole number from 1 to 999, not '$runs'"
[ -d "$build" ] || { echo "gpu-bench: $build is not a directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

rs_quick=()
if [ ${#quick[@]} -gt 0 ] && [ -x "$build/tests/bench/bench_gpu" ]; then
    if "$build/tests/bench/bench_gpu" --help 2>&1 | grep -q -- '--quick'; then
        rs_quick=(--quick)
    else
        echo "gpu-bench: bench_gpu has no --quick; it runs in full" >&2
    fi
fi

# An earlier run's files, which a later summary could be taken for, go first.
rm -f "$build"/gpu-bench-raw-[0-9]*.txt
raws=()
for k in $(seq 1 "$runs"); do
    [ "$runs" -eq 1 ] || echo "gpu-bench: run $k of $runs" >&2
    raws+=("$build/gpu-bench-raw-$k.txt")
    bench_once "${raws[-1]}" "$k"
done
raw="$build/gpu-bench-raw.txt"
cp "${raws[-1]}" "$raw" || exit 1
echo "gpu-bench: raw output in ${raws[*]} (the last also in $raw)" >&2
if [ "$runs" -eq 1 ]; then
    print_table "$raw"
else
    print_table "${raws[@]}"
fi
