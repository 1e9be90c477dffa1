#!/usr/bin/env bash
# Benchmark (not a test): ringside's data-parallel training and all-reduce on the GPUs of one
# host against PyTorch DDP on the same GPUs, in one run.
#
# usage: scripts/gpu-bench-multi.sh BUILD_DIR [--quick] [--devices 0,1] [--comm-lib PATH]
#        scripts/gpu-bench-multi.sh --from-raw RAW_FILE
#
# Runs BUILD_DIR/tests/bench/bench_multi (ringside's communicator, a plain NCCL loop on the same
# library, data-parallel MLP training and one GPU alone), then
# `torchrun --standalone --nproc_per_node=N tests/bench/torch_ddp.py` on the same N GPUs, one
# after the other; saves both outputs to BUILD_DIR/gpu-bench-multi-raw.txt and prints a Markdown
# table: each comparison, the ratio and pass/fail against the goals. --devices picks the GPUs
# (both programs; default all), --comm-lib the NCCL (RCCL) library bench_multi loads (default
# $RS_COMM_LIB, as for the comm_gpu test, else the platform's), --quick asks both for fewer
# repetitions. --from-raw prints the table again from a saved raw file, running nothing.
# $PYTHON (default python3) runs the table and, unless $TORCHRUN is set (default: torchrun,
# else "$PYTHON -m torch.distributed.run"), the PyTorch side.
#
# Exit status: 0 when both programs ran (missed goals are in the table, not the status); 1 when
# either failed or is missing (the table then holds the other side's numbers alone and says
# why); 2 on a usage error.
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}

usage() {
    echo "usage: $0 BUILD_DIR [--quick] [--devices 0,1] [--comm-lib PATH]" >&2
    echo "       $0 --from-raw RAW_FILE" >&2
    exit 2
}

# Print the table from a raw file: the key=value lines and records (`name field=value ...`) of
# both programs and the '# status: NAME rc=N reason=TEXT' lines this script writes after each.
# Exit 0, or 1 when a side failed.
print_table() {
    "$PYTHON" - "$1" << 'PY'
import re
import sys

raw_path = sys.argv[1]
vals, recs, status = {}, {}, {}
NAME = re.compile(r"(rs|nccl|torch)_[A-Za-z0-9_]+")
with open(raw_path, encoding="utf-8", errors="replace") as f:
    for line in f:
        line = line.rstrip("\n")
        m = re.match(r"^# status: (\S+) rc=(-?\d+)(?: reason=(.*))?$", line)
        if m:
            status[m.group(1)] = (int(m.group(2)), m.group(3) or "")
            continue
        # a launcher may put "[rank0]:" or "[default0]:" before a worker's lines
        line = re.sub(r"^\s*\[[A-Za-z]*\d+\]:\s*", "", line)
        if line.startswith("#") or "=" not in line:
            continue
        head, _, rest = line.partition(" ")
        if "=" in head:  # key=value (the value may hold spaces)
            k, v = line.split("=", 1)
            if NAME.fullmatch(k.strip()):
                vals[k.strip()] = v.strip()
        elif NAME.fullmatch(head):  # a record: name field=value ...
            fields = dict(t.split("=", 1) for t in rest.split() if "=" in t)
            recs.setdefault(head, []).append(fields)


class Missing(Exception):
    pass


def num(key):
    if key not in vals:
        raise Missing(f"missing {key}")
    try:
        return float(vals[key])
    except ValueError:
        raise Missing(f"bad {key}={vals[key]}") from None


def rec(name, field, **match):
    """The field of the last `name` record whose fields equal match, as a number."""
    want = " ".join(f"{k}={v}" for k, v in match.items())
    for r in reversed(recs.get(name, [])):
        if all(r.get(k) == str(v) for k, v in match.items()):
            if field not in r:
                raise Missing(f"{name} {want}: no {field}")
            try:
                return float(r[field])
            except ValueError:
                raise Missing(f"{name} {want}: bad {field}={r[field]}") from None
    raise Missing(f"missing {name} {want}")


def get(fn, *a, **kw):
    """(value, None) or (None, why)."""
    try:
        return fn(*a, **kw), None
    except Missing as e:
        return None, str(e)


def fmt(v, unit=""):
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1e6:
        s = f"{v:.3g}".replace("e+0", "e").replace("e+", "e")
    elif a >= 1000:
        s = f"{v:,.0f}"
    elif a >= 100:
        s = f"{v:.1f}"
    else:
        s = f"{v:.3g}"
    return f"{s} {unit}".strip()


def fmt_ratio(v):
    return f"{v:,.0f}x" if abs(v) >= 1000 else f"{v:.3g}x"


def side_ran(prefixes, name):
    """(ran, reason): a side ran when it exited 0, or without a status line but with keys."""
    has = any(k.startswith(prefixes) for k in list(vals) + list(recs))
    rc, reason = status.get(name, (0 if has else None, ""))
    if rc is None:
        return False, f"no {name} output in {raw_path}"
    if rc != 0:
        return False, f"{name} exited {rc}" + (f": {reason}" if reason else "")
    if not has:
        return False, f"{name} printed no {'/'.join(p + '*' for p in prefixes)} keys"
    return True, ""


goals = []  # (label, met or None when it could not be computed)


def judge(label, value, goal, ok):
    """'pass', '**FAIL**' or 'n/a', recording the goal."""
    if value is None:
        goals.append((label, None))
        return "n/a"
    met = ok(value)
    goals.append((label, met))
    return "pass" if met else "**FAIL**"


def why_of(*whys):
    w = "; ".join(x for x in whys if x)
    return f" ({w})" if w else ""


def print_rows(title, header, body, note=None):
    print(f"\n### {title}\n")
    if note:
        print(note + "\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] * len(header)) + "|")
    for r in body:
        print("| " + " | ".join(str(c) for c in r) + " |")


rs_ok, rs_why = side_ran(("rs_", "nccl_"), "bench_multi")
t_ok, t_why = side_ran(("torch_",), "torch_ddp")
has_rs = any(k.startswith(("rs_", "nccl_")) for k in list(vals) + list(recs))
has_t = any(k.startswith("torch_") for k in list(vals) + list(recs))

print("## ringside data-parallel training vs PyTorch DDP\n")
print(f"- ringside: {vals.get('rs_world', '?')} x {vals.get('rs_device', '?')} "
      f"({vals.get('rs_arch', '?')}), {vals.get('rs_comm_lib', '?')} "
      f"{vals.get('nccl_version', '?')}")
print(f"- PyTorch: {vals.get('torch_world', '?')} x {vals.get('torch_device', '?')}, torch "
      f"{vals.get('torch_version', '?')}, NCCL {vals.get('torch_nccl_version', '?')}")
if has_rs and has_t:
    if vals.get("rs_world") != vals.get("torch_world"):
        print("- **warning: the two ran on different numbers of GPUs**")
    elif vals.get("rs_device") != vals.get("torch_device"):
        print("- **warning: the two report different devices; the ratios compare different GPUs**")
print(f"- raw output: {raw_path}")
for ok, why in ((rs_ok, rs_why), (t_ok, t_why)):
    if not ok:
        print(f"- **{why}**")

if not has_rs or not has_t:
    # One side has nothing: the other's numbers alone.
    if has_rs or has_t:
        pre = ("rs_", "nccl_") if has_rs else ("torch_",)
        body = [(k, vals[k]) for k in sorted(vals) if k.startswith(pre)]
        body += [(n, " ".join(f"{a}={b}" for a, b in r.items()))
                 for n in sorted(recs) if n.startswith(pre) for r in recs[n]]
        print_rows("ringside alone (no PyTorch reference)" if has_rs
                   else "PyTorch alone (no ringside figures)", ["key", "value"], body)
    else:
        print("\nneither side printed any figures")
    sys.exit(1)

world, _ = get(num, "rs_world")
n = int(world) if world else 2

# Data-parallel MLP: steps/s (every GPU one step on its own batch per step)
rows = []
for hid, bs in (("32,16", 256), ("128,64", 4096)):
    label = f"MLP 24-{hid.replace(',', '-')}-1, batch {bs}/GPU, steps/s"
    r, rw = get(rec, "rs_ddp_mlp", "steps_per_s", hidden=hid, batch_per_gpu=bs)
    t, tw = get(rec, "torch_ddp_mlp", "steps_per_s", hidden=hid, batch_per_gpu=bs)
    ratio = r / t if r and t else None
    res = judge(label, ratio, 20, lambda x: x >= 20)
    rows.append((label, fmt(r), fmt(t), (fmt_ratio(ratio) if ratio else "n/a") + why_of(rw, tw),
                 ">= 20x", res))
print_rows(f"Data-parallel MLP on {n} GPUs vs PyTorch DDP (ratio = ringside / PyTorch)",
           ["workload", "ringside", "PyTorch DDP", "ratio", "goal", "result"], rows)

# Scaling: N GPUs' total samples/s against one GPU's
rows = []
for hid, bs in (("128,64", 4096), ("32,16", 256)):
    label = f"MLP 24-{hid.replace(',', '-')}-1, batch {bs}/GPU, samples/s"
    d, dw = get(rec, "rs_ddp_mlp", "samples_per_s", hidden=hid, batch_per_gpu=bs)
    s, sw = get(rec, "rs_single_mlp", "samples_per_s", hidden=hid, batch=bs)
    ratio = d / s if d and s else None
    if hid == "128,64":
        goal = 0.9 * n
        gtxt = f">= {goal:.3g}x"
        res = judge(f"{n} GPUs vs 1 ({label})", ratio, goal, lambda x, g=goal: x >= g)
    else:
        gtxt, res = "-", "for the record"
    rows.append((label, fmt(d), fmt(s), (fmt_ratio(ratio) if ratio else "n/a") + why_of(dw, sw),
                 gtxt, res))
print_rows(f"Scaling: {n} GPUs vs one (ringside)",
           ["workload", f"{n} GPUs", "1 GPU", "ratio", "goal", "result"], rows)

# All-reduce
rows = []
for nb in (5380, 1 << 20, 64 << 20, 256 << 20):
    label = f"{nb} B" if nb < 1 << 20 else f"{nb >> 20} MiB"
    ru, rw = get(rec, "rs_allreduce_us", "us", bytes=nb)
    rb, _ = get(rec, "rs_allreduce_us", "busbw_GBps", bytes=nb)
    nu, nw = get(rec, "nccl_allreduce_us", "us", bytes=nb)
    nbw, _ = get(rec, "nccl_allreduce_us", "busbw_GBps", bytes=nb)
    tu, tw = get(rec, "torch_allreduce_us", "us", bytes=nb)
    tb, _ = get(rec, "torch_allreduce_us", "busbw_GBps", bytes=nb)
    of_nccl = rb / nbw * 100 if rb is not None and nbw else None
    if nb == 5380:
        gtxt = "<= 20 us"
        res = judge(f"all-reduce {label} latency", ru, 20, lambda x: x <= 20)
        extra = why_of(rw)
    elif nb >= 64 << 20:
        gtxt = ">= 90% of NCCL"
        res = judge(f"all-reduce {label} bus bandwidth", of_nccl, 90, lambda x: x >= 90)
        extra = why_of(rw, nw)
    else:
        gtxt, res, extra = "-", "for the record", ""
    rows.append((label, fmt(ru), fmt(rb), fmt(nu), fmt(nbw), fmt(tu), fmt(tb),
                 (f"{of_nccl:.0f}%" if of_nccl is not None else "n/a") + extra, gtxt, res))
print_rows(f"All-reduce (float sum) on {n} GPUs: latency (us) and bus bandwidth (GB/s)",
           ["message", "ringside us", "GB/s", "plain NCCL us", "GB/s", "PyTorch us", "GB/s",
            "ringside / NCCL bandwidth", "goal", "result"], rows,
           note="bus bandwidth = 2 (n - 1) / n x bytes / time; the plain NCCL loop calls the "
                "same library as ringside's communicator, in the same program.")

# Init and destroy
rows = []
for what in ("init", "destroy"):
    r, _ = get(num, f"rs_{what}_s")
    p, _ = get(num, f"nccl_{what}_s")
    t, _ = get(num, f"torch_{what}_s")
    rows.append((what, fmt(r, "s"), fmt(p, "s"), fmt(t, "s")))
note = ("init: ringside and plain NCCL time the communicator's setup and the first all-reduce "
        "on devices already in use; PyTorch's also holds init_process_group's rendezvous and "
        "the device's context creation.")
o, _ = get(num, "rs_init_open_s")
j, _ = get(num, "rs_init_join_s")
if o is not None and j is not None:
    note += (f" ringside's init: open {fmt(o, 's')}, join {fmt(j, 's')}, the rest the first "
             "all-reduce.")
print_rows("Communicator init and destroy (for the record)",
           ["", "ringside", "plain NCCL", "PyTorch"], rows, note=note)

checks = []
for name in ("rs", "nccl"):
    checks.append(f"{name} all-reduce check: {vals.get(f'{name}_allreduce_check', 'n/a')}")
for hid, bs in (("32,16", 256), ("128,64", 4096)):
    sp, _ = get(rec, "rs_ddp_mlp", "param_spread", hidden=hid, batch_per_gpu=bs)
    checks.append(f"MLP {hid} ranks' parameters differ by {fmt(sp) if sp is not None else 'n/a'}")
print("\n" + "; ".join(checks))

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

BENCH_NAME=gpu-bench-multi
# shellcheck source=scripts/bench-lib.sh
. "$top/scripts/bench-lib.sh"

[ $# -ge 1 ] || usage
if [ "$1" = "--from-raw" ]; then
    [ $# -eq 2 ] || usage
    [ -r "$2" ] || { echo "gpu-bench-multi: cannot read $2" >&2; exit 2; }
    print_table "$2"
    exit $?
fi

build=$1
shift
quick=()
devices=""
lib=${RS_COMM_LIB:-}
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=(--quick) ;;
    --devices)
        [ $# -ge 2 ] || usage
        devices=$2
        shift
        ;;
    --comm-lib)
        [ $# -ge 2 ] || usage
        lib=$2
        shift
        ;;
    *) usage ;;
    esac
    shift
done
[ -z "$devices" ] || [[ "$devices" =~ ^[0-9]+(,[0-9]+)*$ ]] || usage
[ -d "$build" ] || { echo "gpu-bench-multi: $build is not a directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
bench="$build/tests/bench/bench_multi"
raw="$build/gpu-bench-multi-raw.txt"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bench-multi.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

{
    echo "# gpu-bench-multi raw output, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname)"
    echo "# CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}" \
        "HIP_VISIBLE_DEVICES=${HIP_VISIBLE_DEVICES-unset} devices=${devices:-all}"
} > "$raw"

if [ -x "$bench" ]; then
    args=("${quick[@]}")
    [ -n "$devices" ] && args+=(--devices "$devices")
    [ -n "$lib" ] && args+=(--comm-lib "$lib")
    run bench_multi "$tmp/rs" "$bench" "${args[@]}"
else
    echo "$bench not found or not executable (is the GPU backend built?)" > "$tmp/rs.err"
    : > "$tmp/rs"
    RC=127
fi
append_output "$raw" bench_multi "$tmp/rs"

# PyTorch on the same GPUs: as many processes as bench_multi had ranks.
if [ -n "$devices" ]; then
    nproc=$(tr ',' '\n' <<< "$devices" | wc -l)
    torch_env=(env "CUDA_VISIBLE_DEVICES=$devices")
else
    nproc=$(sed -n 's/^rs_world=\([0-9][0-9]*\)$/\1/p' "$tmp/rs" | head -n 1)
    [ -n "$nproc" ] || nproc=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
    [ -n "$nproc" ] && [ "$nproc" -gt 0 ] ||
        nproc=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2> /dev/null)
    [ -n "$nproc" ] && [ "$nproc" -gt 0 ] || nproc=2
    torch_env=()
fi
if [ -n "${TORCHRUN:-}" ]; then
    read -r -a launcher <<< "$TORCHRUN"
elif command -v torchrun > /dev/null 2>&1; then
    launcher=(torchrun)
else
    launcher=("$PYTHON" -m torch.distributed.run)
fi
run torch_ddp "$tmp/torch" "${torch_env[@]}" "${launcher[@]}" --standalone \
    --nproc_per_node="$nproc" "$top/tests/bench/torch_ddp.py" "${quick[@]}"
append_output "$raw" torch_ddp "$tmp/torch"

echo "gpu-bench-multi: raw output in $raw" >&2
print_table "$raw"
