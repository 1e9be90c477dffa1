#!/usr/bin/env python3
"""PyTorch reference figures for the GPU benchmark (not a test).

Runs, on the first CUDA device, the PyTorch forms of the workloads that bench_gpu times: a
device-to-device copy (the bandwidth ceiling), VPOC volume profiles of 2520 sessions x 1380
one-minute bars in several PyTorch styles (whole sessions, and in chunks of 500 bars as
ringside's dense kernel takes them), the 24 -> hidden -> 1 SiLU MLP's Adam training step
(eager, CUDA-graph replay, torch.compile) and the cost of an empty synchronize.

Output: one `key=value` line per figure on stdout, `#` comment lines beside them and nothing
else (everything PyTorch, Triton or the compilers print goes to stderr). Times are wall-clock
over a number of repetitions between two synchronizes, after warm-up calls.

Exit status: 0 when every figure was measured (a torch.compile failure only leaves its key
out), 1 when a section failed (its keys are missing; the reason is on stderr and in a comment
line), 2 when torch cannot be imported or sees no CUDA device.

usage: torch_ref.py [--quick] [--skip-compile]
"""
import argparse
import os
import sys
import time
import traceback

SESSIONS = 2520  # ~10 years of RTH+ETH sessions
SESSION_BARS = 1380  # one-minute bars per session
TICK = 0.25
FIXED_BINS = 4096  # the index_add form's bins per session
SEED_LOOP_BARS = 200
DENSE_CHUNK = 125  # bars a session a chunk of the dense forms, as bench_gpu's dense path
COPY_FLOATS = 2**28
FEATURES = 24
HIDDENS = ((32, 16), (128, 64))
BATCHES = (256, 4096)
EAGER_STEPS_PER_EPOCH = 64
LR = 2e-4


def open_result_stream():
    """Results go to a private copy of stdout; fd 1 itself is pointed at stderr, so whatever
    else writes to stdout (libraries, compiler subprocesses) cannot mix with the key lines."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


OUT = None
FAILED = []


def emit(key, value, fmt="{:.6g}"):
    OUT.write(f"{key}={fmt.format(value) if isinstance(value, float) else value}\n")


def comment(text):
    OUT.write("# " + " ".join(str(text).split()) + "\n")


def section(name, fn, *args, optional=False):
    """Run one section; a failure prints a comment and, unless optional, marks the run failed."""
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - any failure of a section is reported, not fatal
        traceback.print_exc()
        msg = f"{type(e).__name__}: {e}"[:300]
        comment(f"{name} failed: {msg}")
        if not optional:
            FAILED.append(name)


def timeit(torch, fn, reps, warm):
    """Seconds per call of fn: warm calls, then reps calls between two synchronizes."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - s) / reps


class Reps:
    """Repetition counts: the reference scripts' own, or fewer with --quick."""

    def __init__(self, quick):
        self.copy = 5 if quick else 20
        self.vpoc = 10 if quick else 50
        self.seed_loop = 1 if quick else 3
        self.eager_epochs = 2 if quick else 5
        self.graph = 300 if quick else 2000
        self.fused = 100 if quick else 300
        self.compiled = 100 if quick else 300
        self.sync = 500 if quick else 2000


def bench_copy(torch, reps):
    dev = "cuda"
    a = torch.empty(COPY_FLOATS, device=dev)
    b = torch.empty_like(a)
    tc = timeit(torch, lambda: b.copy_(a), reps.copy, 5)
    comment(f"d2d copy of 2^28 floats, read + write counted, {reps.copy} reps")
    emit("torch_d2d_copy_TBps", 2 * a.numel() * 4 / tc / 1e12)
    del a, b
    torch.cuda.empty_cache()


def bench_host_copies(torch):
    """256 MiB host<->device copies as a loader makes them (pinned: non_blocking from page-locked
    memory; pageable: from ordinary memory), each one asynchronous copy waited for, the best and
    the worst of 5 after one to warm up: what the doctor's copy figures are set beside. The host
    buffer is written first, as a loader's batch is: a copy from pages never touched reads the
    kernel's one zero page, from cache, and is not what a loader's copy does."""
    n = 256 << 20
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    for pinned in (True, False):
        host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
        host.fill_(1)
        for way in ("h2d", "d2h"):
            rates = []
            for i in range(6):
                torch.cuda.synchronize()
                s = time.perf_counter()
                if way == "h2d":
                    dev.copy_(host, non_blocking=True)
                else:
                    host.copy_(dev, non_blocking=True)
                torch.cuda.synchronize()
                if i > 0:
                    rates.append(n / (time.perf_counter() - s) / 1e9)
            key = f"torch_copy_{way}_{'pinned' if pinned else 'pageable'}"
            emit(f"{key}_GBps", max(rates))
            emit(f"{key}_worst_GBps", min(rates))
        del host
    del dev
    torch.cuda.empty_cache()


def bench_nvml():
    """pynvml's calls for what ringside's NVML provider reads in one sample (utilisation,
    memory, temperature, power and its limit, clocks, fan; the process list and ECC counters
    come at a slower cadence there), microseconds a GPU: the reference for the provider's
    per-GPU sample cost."""
    import pynvml

    pynvml.nvmlInit()
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                   for i in range(pynvml.nvmlDeviceGetCount())]

        def one(h):
            pynvml.nvmlDeviceGetUtilizationRates(h)
            pynvml.nvmlDeviceGetMemoryInfo(h)
            pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            pynvml.nvmlDeviceGetPowerUsage(h)
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
            try:
                pynvml.nvmlDeviceGetFanSpeed(h)
            except pynvml.NVMLError:
                pass  # no fan (passively cooled boards)
            pynvml.nvmlDeviceGetEnforcedPowerLimit(h)

        for h in handles:
            one(h)
        reps = 200
        s = time.perf_counter()
        for _ in range(reps):
            for h in handles:
                one(h)
        emit("torch_pynvml_per_gpu_us", (time.perf_counter() - s) / reps / len(handles) * 1e6)
    finally:
        pynvml.nvmlShutdown()


def bench_sync(torch, reps):
    tsync = timeit(torch, torch.cuda.synchronize, reps.sync, 100)
    emit("torch_empty_sync_us", tsync * 1e6)


def make_bars(torch):
    """Synthetic ES one-minute bars, sessions x bars: a random walk rounded to the tick."""
    dev = "cuda"
    torch.manual_seed(0)
    ret = torch.randn(SESSIONS, SESSION_BARS, device=dev) * 0.5
    price = (4000 + torch.cumsum(ret, 1)).clamp_min(1)
    price = torch.round(price / TICK) * TICK
    vol = torch.randint(1, 2000, (SESSIONS, SESSION_BARS), device=dev).float()
    return price, vol


def vpoc_forms(torch, price, vol):
    """The vectorised VPOC forms: per-session bincount over ticks above the session low, and
    the same with a fixed bin count through index_add (no host sync for the bin count)."""
    dev = price.device
    S = price.shape[0]
    rows = torch.arange(S, device=dev)[:, None]

    def vpoc_vec():
        lo = price.min(1, keepdim=True).values
        idx = ((price - lo) / TICK).long()
        nb = int(idx.max()) + 1
        flat = idx + rows * nb
        prof = torch.bincount(flat.flatten(), weights=vol.flatten(), minlength=S * nb).view(S, nb)
        poc = prof.argmax(1)
        return lo.squeeze(1) + poc * TICK

    def vpoc_fixed():
        lo = price.min(1, keepdim=True).values
        idx = ((price - lo) / TICK).long().clamp_max(FIXED_BINS - 1)
        flat = idx + rows * FIXED_BINS
        prof = torch.zeros(S * FIXED_BINS, device=dev).index_add_(0, flat.flatten(), vol.flatten())
        prof = prof.view(S, FIXED_BINS)
        return lo.squeeze(1) + prof.argmax(1) * TICK

    return vpoc_vec, vpoc_fixed


ROUNDS = 5  # VPOC rounds, as bench_gpu's: the table states the spread of the ratios


def emit_runs(key, values):
    """key=median and key_runs=v1,v2,... in run order (milliseconds)."""
    emit(key, sorted(values)[len(values) // 2])
    emit(key + "_runs", ",".join(f"{v:.4f}" for v in values), fmt="{}")


def bench_vpoc(torch, reps, price, vol):
    vpoc_vec, vpoc_fixed = vpoc_forms(torch, price, vol)
    comment(f"vpoc S={SESSIONS} B={SESSION_BARS} tick={TICK} reps={reps.vpoc} rounds={ROUNDS}")
    # Both forms must agree on the POC (ties aside): a sanity check, not a figure.
    agree = (vpoc_vec() == vpoc_fixed()).float().mean().item()
    comment(f"vpoc bincount and index_add POCs agree on {agree * 100:.2f}% of sessions")
    vec = [timeit(torch, vpoc_vec, reps.vpoc, 5) * 1e3 for _ in range(ROUNDS)]
    emit_runs("torch_vpoc_vectorised_ms", vec)
    emit("torch_vpoc_indexadd_ms", timeit(torch, vpoc_fixed, reps.vpoc, 5) * 1e3)


def vpoc_chunk_bins(torch, price):
    """The bin count the chunked forms use: the widest session's range in ticks, plus one, so
    every bar has its bin (computed once, before timing: it reads the value back)."""
    lo = price.min(1, keepdim=True).values
    return int(((price - lo) / TICK).long().max()) + 1


def vpoc_chunked_forms(torch, price, vol, bins, chunk=DENSE_CHUNK):
    """The chunked dense VPOC forms on price and vol ([S, B], any device): chunk after chunk of
    `chunk` bars across every session, each bar's volume added into bin (price - session low) /
    TICK of an [S, bins] float32 profile. onehot: F.one_hot(idx, bins) times the volumes, summed
    over the chunk's bars (an [S, chunk, bins] int64 one-hot and its float32 product a chunk);
    scatter: prof.scatter_add_(1, idx, vol) a chunk. Each returns (lo [S], prof [S, bins]);
    neither reads a value back. bins: at least vpoc_chunk_bins(price)."""
    F = torch.nn.functional
    S, B = price.shape

    def onehot():
        lo = price.min(1, keepdim=True).values
        prof = torch.zeros(S, bins, device=price.device, dtype=vol.dtype)
        for j in range(0, B, chunk):
            idx = ((price[:, j : j + chunk] - lo) / TICK).long()
            prof += (F.one_hot(idx, bins) * vol[:, j : j + chunk, None]).sum(1)
        return lo.squeeze(1), prof

    def scatter():
        lo = price.min(1, keepdim=True).values
        prof = torch.zeros(S, bins, device=price.device, dtype=vol.dtype)
        for j in range(0, B, chunk):
            idx = ((price[:, j : j + chunk] - lo) / TICK).long()
            prof.scatter_add_(1, idx, vol[:, j : j + chunk])
        return lo.squeeze(1), prof

    return onehot, scatter


def profile_poc(lo, prof):
    """The POC price of each session's profile: its low plus the first bin of most volume."""
    return lo + prof.argmax(1) * TICK


def bench_vpoc_chunked(torch, reps, price, vol):
    """The chunked dense forms, ROUNDS rounds of each (one-hot, then scatter, within a round),
    their POCs checked against the index_add form's."""
    bins = vpoc_chunk_bins(torch, price)
    onehot, scatter = vpoc_chunked_forms(torch, price, vol, bins)
    _, vpoc_fixed = vpoc_forms(torch, price, vol)

    def poc_onehot():
        return profile_poc(*onehot())

    def poc_scatter():
        return profile_poc(*scatter())

    S, B = price.shape
    comment(f"vpoc chunked S={S} B={B} chunk={DENSE_CHUNK} bins={bins} one-hot chunk "
            f"{S * DENSE_CHUNK * bins * 4 / 2**20:.0f} MiB float32 (+ its int64 one-hot) "
            f"reps={reps.vpoc} rounds={ROUNDS}")
    fixed = vpoc_fixed()
    for name, fn in (("one-hot", poc_onehot), ("scatter_add", poc_scatter)):
        agree = (fn() == fixed).float().mean().item()
        comment(f"vpoc chunked {name} and index_add POCs agree on {agree * 100:.2f}% of sessions")
    t_onehot, t_scatter = [], []
    for _ in range(ROUNDS):
        t_onehot.append(timeit(torch, poc_onehot, reps.vpoc, 5) * 1e3)
        t_scatter.append(timeit(torch, poc_scatter, reps.vpoc, 5) * 1e3)
    emit_runs("torch_vpoc_onehot_chunk125_ms", t_onehot)
    emit_runs("torch_vpoc_scatter_chunk125_ms", t_scatter)
    torch.cuda.empty_cache()  # the one-hot chunks' cached blocks


def bench_vpoc_seed_loop(torch, reps, price, vol):
    """The first VPOC: histc, then one bucketize and one indexed add per bar, first session."""
    dev = price.device
    n = SEED_LOOP_BARS

    def vpoc_seed():
        p = price[0, :n]
        v = vol[0, :n]
        h = torch.histc(p, bins=1000, min=float(p.min()), max=float(p.max()))
        vb = torch.zeros_like(h)
        edges = torch.linspace(p.min(), p.max(), 1000, device=dev)
        for i in range(n):
            b = torch.bucketize(p[i], edges)
            vb[b.clamp(max=999)] += v[i]
        return vb

    ts = timeit(torch, vpoc_seed, reps.seed_loop, 1)
    comment(f"vpoc seed loop: {n} bars of one session, {reps.seed_loop} reps")
    emit("torch_vpoc_seed_loop_ms", ts * 1e3)
    emit("torch_vpoc_seed_loop_bars_per_s", n / ts)


def bench_vpoc_compiled(torch, reps, price, vol):
    _, vpoc_fixed = vpoc_forms(torch, price, vol)
    vc = torch.compile(vpoc_fixed)
    for _ in range(3):
        vc()
    emit_runs("torch_vpoc_compiled_ms",
              [timeit(torch, vc, reps.vpoc, 5) * 1e3 for _ in range(ROUNDS)])


def make_mlp(torch, hid):
    layers = []
    d = FEATURES
    for h in hid:
        layers += [torch.nn.Linear(d, h), torch.nn.SiLU()]
        d = h
    layers += [torch.nn.Linear(d, 1)]
    return torch.nn.Sequential(*layers).to("cuda")


def mlp_key(kind, hid, bs):
    return f"torch_mlp_{kind}_steps_per_s_h{'_'.join(str(h) for h in hid)}_b{bs}"


def bench_mlp_eager(torch, reps, hid, bs):
    """Plain Adam, 64 steps an epoch over slices of device-resident data."""
    dev = "cuda"
    torch.manual_seed(0)
    m = make_mlp(torch, hid)
    opt = torch.optim.Adam(m.parameters(), lr=LR)
    k_steps = EAGER_STEPS_PER_EPOCH
    X = torch.randn(bs * k_steps, FEATURES, device=dev)
    Y = torch.randn(bs * k_steps, 1, device=dev)

    def epoch():
        for k in range(k_steps):
            x = X[k * bs : (k + 1) * bs]
            y = Y[k * bs : (k + 1) * bs]
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            opt.step()

    te = timeit(torch, epoch, reps.eager_epochs, 2)
    emit(mlp_key("eager", hid, bs), k_steps / te)


def bench_mlp_graph(torch, reps, hid, bs):
    """The whole step (zero_grad, forward, loss, backward, capturable Adam) captured in one
    CUDA graph and replayed; then the same model stepped eagerly with fused Adam."""
    dev = "cuda"
    torch.manual_seed(0)
    m = make_mlp(torch, hid)
    opt = torch.optim.Adam(m.parameters(), lr=LR, capturable=True)
    x = torch.randn(bs, FEATURES, device=dev)
    y = torch.randn(bs, 1, device=dev)

    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    tg = timeit(torch, g.replay, reps.graph, 5)
    emit(mlp_key("graph", hid, bs), 1 / tg)
    del g

    m2 = make_mlp(torch, hid)
    opt2 = torch.optim.Adam(m2.parameters(), lr=LR, fused=True)

    def step2():
        opt2.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(m2(x), y)
        loss.backward()
        opt2.step()

    tf = timeit(torch, step2, reps.fused, 5)
    emit(mlp_key("eager_fused", hid, bs), 1 / tf)


def bench_mlp_compiled(torch, reps):
    """Forward + loss + backward through torch.compile (max-autotune, no CUDA graphs), fused
    Adam outside it; hidden (32, 16), batch 256."""
    dev = "cuda"
    hid, bs = (32, 16), 256
    torch.manual_seed(0)
    m = make_mlp(torch, hid)
    opt = torch.optim.Adam(m.parameters(), lr=LR, fused=True)
    x = torch.randn(bs, FEATURES, device=dev)
    y = torch.randn(bs, 1, device=dev)

    @torch.compile(mode="max-autotune-no-cudagraphs")
    def fwdbwd():
        loss = torch.nn.functional.mse_loss(m(x), y)
        loss.backward()
        return loss

    def step3():
        opt.zero_grad(set_to_none=True)
        fwdbwd()
        opt.step()

    for _ in range(10):
        step3()
    t3 = timeit(torch, step3, reps.compiled, 5)
    emit(mlp_key("compiled", hid, bs), 1 / t3)


def compiled_section(name, torch, fn, *args):
    try:
        fn(torch, *args)
    except Exception as e:  # noqa: BLE001 - torch.compile may fail on any toolchain problem
        traceback.print_exc()
        comment(f"compile failed: {name}: {type(e).__name__}: {e}"[:300])


def main():
    global OUT
    ap = argparse.ArgumentParser(description="PyTorch reference figures for bench_gpu.")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (same warm-ups)")
    ap.add_argument("--skip-compile", action="store_true", help="leave out torch.compile")
    ap.add_argument("--only", choices=("copies",),
                    help="copies: the host copies alone (another round of them)")
    args = ap.parse_args()
    OUT = open_result_stream()

    try:
        import torch
    except Exception as e:  # noqa: BLE001 - ImportError or a broken install
        comment(f"torch unavailable: {type(e).__name__}: {e}")
        print(f"torch_ref: cannot import torch: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        comment(f"torch {torch.__version__} sees no CUDA device")
        print("torch_ref: torch.cuda.is_available() is false", file=sys.stderr)
        return 2

    reps = Reps(args.quick)
    t0 = time.perf_counter()
    emit("torch_device", torch.cuda.get_device_name(0))
    emit("torch_version", torch.__version__)
    comment(f"quick={int(args.quick)} skip_compile={int(args.skip_compile)}")

    if args.only == "copies":
        section("host copies", bench_host_copies, torch)
        return 1 if FAILED else 0
    section("d2d copy", bench_copy, torch, reps)
    section("empty sync", bench_sync, torch, reps)
    section("host copies", bench_host_copies, torch)
    section("pynvml", bench_nvml, optional=True)
    price, vol = make_bars(torch)
    section("vpoc", bench_vpoc, torch, reps, price, vol)
    section("vpoc chunked", bench_vpoc_chunked, torch, reps, price, vol)
    section("vpoc seed loop", bench_vpoc_seed_loop, torch, reps, price, vol)
    for hid in HIDDENS:
        for bs in BATCHES:
            section(f"mlp eager {hid} b{bs}", bench_mlp_eager, torch, reps, hid, bs)
            section(f"mlp graph {hid} b{bs}", bench_mlp_graph, torch, reps, hid, bs)
    if args.skip_compile:
        comment("torch.compile skipped (--skip-compile)")
    else:
        compiled_section("vpoc", torch, bench_vpoc_compiled, reps, price, vol)
        compiled_section("mlp", torch, bench_mlp_compiled, reps)

    comment(f"torch_ref ran {time.perf_counter() - t0:.1f} s")
    if FAILED:
        comment("failed sections: " + ", ".join(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
