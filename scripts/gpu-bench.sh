#!/usr/bin/env bash
# Benchmark (not a test): ringside's GPU kernels against PyTorch on the same GPU, in one run.
#
# usage: scripts/gpu-bench.sh BUILD_DIR [--quick] [--skip-compile]
#        scripts/gpu-bench.sh --from-raw RAW_FILE
#
# Runs BUILD_DIR/tests/bench/bench_gpu and bench_tele (the NVML sampler's cost), then
# tests/bench/torch_ref.py (with $PYTHON, default python3; pynvml for its NVML reference), one
# after the other on the same device, saves the outputs to
# BUILD_DIR/gpu-bench-raw.txt and prints a Markdown table: each comparison, the ratio (how many
# times faster ringside is: torch_ms / rs_ms for times, rs / torch for rates) and pass/fail
# against the goals. --quick asks both for fewer repetitions; --skip-compile leaves out
# torch.compile. --from-raw prints the table again from a saved raw file, running nothing.
#
# Exit status: 0 when both programs ran (missed goals are in the table, not the status); 1 when
# either failed or is missing (the table then holds the other side's numbers alone and says
# why); 2 on a usage error.
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}

usage() {
    echo "usage: $0 BUILD_DIR [--quick] [--skip-compile]" >&2
    echo "       $0 --from-raw RAW_FILE" >&2
    exit 2
}

# Print the table from a raw file: the key=value lines of both programs and the
# '# status: NAME rc=N reason=TEXT' lines this script writes after each. Exit 0, or 1 when a
# side failed.
print_table() {
    "$PYTHON" - "$1" << 'PY'
import re
import sys

raw_path = sys.argv[1]
vals, status = {}, {}
with open(raw_path, encoding="utf-8", errors="replace") as f:
    for line in f:
        line = line.rstrip("\n")
        m = re.match(r"^# status: (\S+) rc=(-?\d+)(?: reason=(.*))?$", line)
        if m:
            status[m.group(1)] = (int(m.group(2)), m.group(3) or "")
            continue
        if line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        if re.fullmatch(r"(rs|torch)_[A-Za-z0-9_]+", k):
            vals[k.strip()] = v.strip()

SESSIONS, BARS = 2520, 1380
TEXT_KEYS = {"rs_device", "rs_arch", "torch_device", "torch_version"}


class Missing(Exception):
    pass


def num(key):
    if key not in vals:
        raise Missing(f"missing {key}")
    try:
        return float(vals[key])
    except ValueError:
        raise Missing(f"bad {key}={vals[key]}") from None


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


def side_ran(prefix, name):
    """(ran, reason): a side ran when it exited 0, or without a status line but with keys."""
    has_keys = any(k.startswith(prefix) for k in vals)
    rc, reason = status.get(name, (0 if has_keys else None, ""))
    if rc is None:
        return False, f"no {name} output in {raw_path}"
    if rc != 0:
        return False, f"{name} exited {rc}" + (f": {reason}" if reason else "")
    if not has_keys:
        return False, f"{name} printed no {prefix}* keys"
    return True, ""


rows = []
goals = []  # (label, met) for each row with a goal that could be computed


def row(label, rs_key, torch_key, unit, faster, goal=None, note="-", rs_conv=None):
    """faster: 'time' (ratio torch / rs) or 'rate' (ratio rs / torch). rs_conv turns the
    ringside figure into the unit of the PyTorch one."""
    conv = rs_conv or (lambda v: v)
    gtxt = f">= {goal:g}x" if goal is not None else "-"
    try:
        r = conv(num(rs_key))
        t = num(torch_key)
    except Missing:
        e = "; ".join(str(x) for x in (_why(rs_key), _why(torch_key)) if x)
        rs_txt = f"{fmt(conv(num(rs_key)))} {unit}" if _ok(rs_key) else ""
        t_txt = f"{fmt(num(torch_key))} {unit}" if _ok(torch_key) else ""
        rows.append((label, rs_txt, t_txt, f"n/a ({e})", gtxt, "n/a" if goal else note))
        if goal is not None:
            goals.append((label, None))
        return
    ratio_row(label, r, t, unit, faster, goal, note)


def _why(key):
    try:
        num(key)
        return None
    except Missing as e:
        return e


def _ok(key):
    try:
        num(key)
        return True
    except Missing:
        return False


def ratio_row(label, r, t, unit, faster, goal=None, note="-"):
    gtxt = f">= {goal:g}x" if goal is not None else "-"
    if r <= 0 or t <= 0:
        rows.append((label, f"{fmt(r)} {unit}", f"{fmt(t)} {unit}", "n/a (non-positive value)",
                     gtxt, "n/a" if goal else note))
        if goal is not None:
            goals.append((label, None))
        return
    ratio = t / r if faster == "time" else r / t
    if goal is None:
        result = note
    else:
        met = ratio >= goal
        goals.append((label, met))
        result = "pass" if met else "**FAIL**"
    rows.append((label, f"{fmt(r)} {unit}", f"{fmt(t)} {unit}", fmt_ratio(ratio), gtxt, result))


def print_rows(title, header, body):
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] * len(header)) + "|")
    for r in body:
        print("| " + " | ".join(str(c) for c in r) + " |")


rs_ok, rs_why = side_ran("rs_", "bench_gpu")
t_ok, t_why = side_ran("torch_", "torch_ref")
rs_partial = not rs_ok and any(k.startswith("rs_") for k in vals)
t_partial = not t_ok and any(k.startswith("torch_") for k in vals)

print("## ringside GPU kernels vs PyTorch\n")
print(f"- ringside: {vals.get('rs_device', '?')} ({vals.get('rs_arch', '?')})")
print(f"- PyTorch: {vals.get('torch_device', '?')}, torch {vals.get('torch_version', '?')}")
if "rs_device" in vals and "torch_device" in vals and vals["rs_device"] != vals["torch_device"]:
    print("- **warning: the two report different devices; the ratios compare different GPUs**")
print(f"- raw output: {raw_path}")
for ok, why in ((rs_ok, rs_why), (t_ok, t_why)):
    if not ok:
        print(f"- **{why}**")


def alone(prefix, title):
    body = [(k, vals[k]) for k in sorted(vals) if k.startswith(prefix) and k not in TEXT_KEYS]
    print_rows(title, ["key", "value"], body)


if not (rs_ok or rs_partial) or not (t_ok or t_partial):
    # One side has nothing: the other's numbers alone.
    if rs_ok or rs_partial:
        alone("rs_", "ringside alone (no PyTorch reference)")
    elif t_ok or t_partial:
        alone("torch_", "PyTorch alone (no ringside figures)")
    else:
        print("\nneither side printed any figures")
    sys.exit(1)

def runs(key):
    """The per-round values of key_runs, or the single key as one round."""
    if key + "_runs" in vals:
        try:
            return [float(x) for x in vals[key + "_runs"].split(",") if x.strip()]
        except ValueError:
            raise Missing(f"bad {key}_runs={vals[key + '_runs']}") from None
    return [num(key)]


def runs_row(label, rs_key, ref_key, goal, ref_name=None):
    """Time ratios ref / rs round by round (rounds paired in order, as many as the shorter
    side has; a side with one value pairs it with every round of the other): the spread, and
    pass only if every round meets the goal."""
    gtxt = f">= {goal:g}x"
    try:
        r, t = runs(rs_key), runs(ref_key)
    except Missing as e:
        rows.append((label, "", "", f"n/a ({e})", gtxt, "n/a"))
        goals.append((label, None))
        return
    if len(r) == 1:
        r = r * len(t)
    if len(t) == 1:
        t = t * len(r)
    pair = [(a, b) for a, b in zip(r, t) if a > 0 and b > 0]
    if not pair:
        rows.append((label, "", "", "n/a (non-positive value)", gtxt, "n/a"))
        goals.append((label, None))
        return
    ratios = sorted(b / a for a, b in pair)
    med = lambda v: sorted(v)[len(v) // 2]
    met = ratios[0] >= goal
    goals.append((label, met))
    spread = (fmt_ratio(ratios[0]) if len(ratios) == 1 else
              f"{fmt_ratio(ratios[0])} to {fmt_ratio(ratios[-1])} over {len(ratios)} rounds")
    rows.append((label, f"{fmt(med(r))} ms", f"{fmt(med(t))} ms" + (f" ({ref_name})" if ref_name
                 else ""), spread, gtxt, "pass" if met else "**FAIL**"))


# VPOC: the batched kernel (every session whole, one launch) and the training loop's path
# (compute_vpoc_set, one launch a 500-bar chunk across every session; the same path the
# dashboard, `ringside vpoc` and the doctor take).
runs_row("VPOC loop path, chunk 500, vs torch.compile (fixed bins)",
         "rs_vpoc_loop_chunk500_ms", "torch_vpoc_compiled_ms", 1)
runs_row("VPOC loop path, chunk 500, vs the batched kernel (at most 2x its time)",
         "rs_vpoc_loop_chunk500_ms", "rs_vpoc_close_ms", 0.5, ref_name="ringside batched")
runs_row("VPOC batched kernel vs torch vectorised bincount", "rs_vpoc_close_ms",
         "torch_vpoc_vectorised_ms", 5)
runs_row("VPOC batched kernel vs torch.compile (fixed bins)", "rs_vpoc_close_ms",
         "torch_vpoc_compiled_ms", 2)
row("VPOC batched kernel vs torch index_add, fixed bins", "rs_vpoc_close_ms",
    "torch_vpoc_indexadd_ms", "ms", "time")
row("VPOC batched kernel vs seed per-bar loop (bars/s)", "rs_vpoc_close_ms",
    "torch_vpoc_seed_loop_bars_per_s", "bars/s", "rate", note="for the record",
    rs_conv=lambda ms: SESSIONS * BARS / (ms * 1e-3) if ms > 0 else 0.0)

# MLP
for hid in ("32_16", "128_64"):
    for bs in (256, 4096):
        sfx = f"h{hid}_b{bs}"
        first = hid == "32_16" and bs == 256
        rk = f"rs_mlp_steps_per_s_{sfx}"
        name = f"MLP {hid.replace('_', ',')} b{bs}"
        row(f"{name} vs eager", rk, f"torch_mlp_eager_steps_per_s_{sfx}", "steps/s", "rate",
            goal=20 if first else None)
        row(f"{name} vs CUDA graph", rk, f"torch_mlp_graph_steps_per_s_{sfx}", "steps/s", "rate",
            goal=2)
        if first:
            row(f"{name} vs torch.compile", rk, f"torch_mlp_compiled_steps_per_s_{sfx}",
                "steps/s", "rate")
        if f"torch_mlp_eager_fused_steps_per_s_{sfx}" in vals:
            row(f"{name} vs eager, fused Adam", rk, f"torch_mlp_eager_fused_steps_per_s_{sfx}",
                "steps/s", "rate")
for peer in ("eager", "graph"):
    row(f"MLP 32,16 b256, 5 timing events/step, vs {'CUDA graph' if peer == 'graph' else peer}",
        "rs_mlp_timed_steps_per_s_h32_16_b256", f"torch_mlp_{peer}_steps_per_s_h32_16_b256",
        "steps/s", "rate")

# Sync and copy
row("empty sync", "rs_empty_sync_us", "torch_empty_sync_us", "us", "time")
row("d2d copy 2^28 floats (same GPU check, ~1x)", "rs_d2d_copy_TBps", "torch_d2d_copy_TBps",
    "TB/s", "rate")

# The doctor's copy figures (its own measurement, 256 MiB, best of 5) beside PyTorch's copies
# of the same size in the same run: the doctor must print what a loader gets (goal: within 10%).
for way, wname in (("h2d", "host to device"), ("d2h", "device to host")):
    for mem in ("pinned", "pageable"):
        row(f"doctor's copy figure, {wname}, {mem}", f"rs_copy_{way}_{mem}_GBps",
            f"torch_copy_{way}_{mem}_GBps", "GB/s", "rate", goal=0.9)


def abs_row(label, key, ref_key, unit, most):
    """An absolute goal: key at most `most`; ref_key (may be missing) shown beside it."""
    gtxt = f"<= {most:g} {unit}"
    ref = f"{fmt(num(ref_key))} {unit}" if _ok(ref_key) else "n/a"
    if not _ok(key):
        rows.append((label, "", ref, f"n/a ({_why(key)})", gtxt, "n/a"))
        goals.append((label, None))
        return
    v = num(key)
    met = v <= most
    goals.append((label, met))
    ratio = fmt_ratio(num(ref_key) / v) if _ok(ref_key) and v > 0 else "-"
    rows.append((label, f"{fmt(v)} {unit}", ref, ratio, gtxt, "pass" if met else "**FAIL**"))


abs_row("NVML telemetry sample, per GPU (PyTorch column: pynvml's calls for the same fields)",
        "rs_tele_nvml_per_gpu_us", "torch_pynvml_per_gpu_us", "us", 50)

print_rows("Comparisons (ratio = times faster ringside is)",
           ["comparison", "ringside", "PyTorch", "ratio", "goal", "result"], rows)

# Bandwidth: bytes the kernels read over their time, against the copy ceiling (goal: the
# close profile's batched kernel at 60% of ringside's own device copy or more).
BW_GOAL = 0.60
bw_rows = []
for prof in ("close", "range"):
    label = f"VPOC {prof}, batched kernel"
    gtxt = f">= {BW_GOAL * 100:.0f}% of copy" if prof == "close" else "-"
    try:
        bytes_ = num(f"rs_vpoc_{prof}_bytes")
        ms = num(f"rs_vpoc_{prof}_ms")
        if ms <= 0:
            raise Missing(f"bad rs_vpoc_{prof}_ms")
    except Missing as e:
        bw_rows.append((label, "", "", f"n/a ({e})", "", gtxt, "n/a" if prof == "close" else "-"))
        if prof == "close":
            goals.append((label + " bandwidth", None))
        continue
    tbps = bytes_ / (ms * 1e-3) / 1e12
    fr = []
    for key in ("rs_d2d_copy_TBps", "torch_d2d_copy_TBps"):
        fr.append(tbps / num(key) if _ok(key) and num(key) > 0 else None)
    txt = " / ".join(f"{f * 100:.0f}%" if f is not None else "n/a" for f in fr)
    result = "-"
    if prof == "close":
        met = fr[0] is not None and fr[0] >= BW_GOAL
        goals.append((label + " bandwidth", met if fr[0] is not None else None))
        result = "n/a" if fr[0] is None else "pass" if met else "**FAIL**"
    bw_rows.append((label, f"{fmt(ms)} ms", f"{fmt(bytes_ / 1e6)} MB", f"{tbps:.3g} TB/s", txt,
                    gtxt, result))
print_rows("VPOC achieved bandwidth (bytes read: 8-byte packed bars, offsets, session table; "
           "copy counts read + write)",
           ["kernel", "time", "bytes read", "achieved", "of copy (ringside / torch)", "goal",
            "result"], bw_rows)

rec = []
for key, unit in (("rs_vpoc_loop_chunk500_wall_ms", "ms (a whole pass as the loop waits for "
                   "it: launches, sync, results)"),):
    rec.append((key, f"{fmt(num(key))} {unit}" if _ok(key) else "n/a (missing)"))
print_rows("For the record", ["figure", "value"], rec)

checked = [g for g in goals if g[1] is not None]
met = sum(1 for g in checked if g[1])
print(f"\ngoals met: {met} of {len(goals)}", end="")
na = [g[0] for g in goals if g[1] is None]
print(f" ({len(na)} not measured: {'; '.join(na)})" if na else "")
for ok, why in ((rs_ok, rs_why), (t_ok, t_why)):
    if not ok:
        print(f"incomplete: {why}")
sys.exit(0 if rs_ok and t_ok else 1)
PY
}

BENCH_NAME=gpu-bench
# shellcheck source=scripts/bench-lib.sh
. "$top/scripts/bench-lib.sh"

[ $# -ge 1 ] || usage
if [ "$1" = "--from-raw" ]; then
    [ $# -eq 2 ] || usage
    [ -r "$2" ] || { echo "gpu-bench: cannot read $2" >&2; exit 2; }
    print_table "$2"
    exit $?
fi

build=$1
shift
quick=()
skip=()
for a in "$@"; do
    case "$a" in
    --quick) quick=(--quick) ;;
    --skip-compile) skip=(--skip-compile) ;;
    *) usage ;;
    esac
done
[ -d "$build" ] || { echo "gpu-bench: $build is not a directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
bench="$build/tests/bench/bench_gpu"
raw="$build/gpu-bench-raw.txt"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

{
    echo "# gpu-bench raw output, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname)"
    echo "# CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}" \
        "HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES-unset}"
} > "$raw"

if [ -x "$bench" ]; then
    rs_quick=()
    if [ ${#quick[@]} -gt 0 ]; then
        if "$bench" --help 2>&1 | grep -q -- '--quick'; then
            rs_quick=(--quick)
        else
            echo "gpu-bench: bench_gpu has no --quick; it runs in full" >&2
        fi
    fi
    run bench_gpu "$tmp/rs" "$bench" "${rs_quick[@]}"
else
    echo "$bench not found or not executable (is the GPU backend built?)" > "$tmp/rs.err"
    : > "$tmp/rs"
    RC=127
fi
append_output "$raw" bench_gpu "$tmp/rs"

# The telemetry sampler's cost on this machine's GPUs (the NVML provider alone).
tele="$build/tests/bench/bench_tele"
if [ -x "$tele" ]; then
    run bench_tele "$tmp/tele" "$tele" 500 nvml
    sed -n 's/^provider=nvml status=ok .*per_gpu_us=\([0-9.]*\).*/rs_tele_nvml_per_gpu_us=\1/p' \
        "$tmp/tele" >> "$tmp/tele"
else
    echo "$tele not found" > "$tmp/tele.err"
    : > "$tmp/tele"
    RC=127
fi
append_output "$raw" bench_tele "$tmp/tele"

run torch_ref "$tmp/torch" "$PYTHON" "$top/tests/bench/torch_ref.py" "${quick[@]}" "${skip[@]}"
append_output "$raw" torch_ref "$tmp/torch"

echo "gpu-bench: raw output in $raw" >&2
print_table "$raw"
