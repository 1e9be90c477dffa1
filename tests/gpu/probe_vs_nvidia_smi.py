#!/usr/bin/env python3
"""Compare `ringside probe --json` with `nvidia-smi --query-gpu` field by field, in one run.

Usage: probe_vs_nvidia_smi.py RINGSIDE
Exit 0 when every field agrees within its tolerance, 1 on a mismatch, 77 (skip) when there is
no nvidia-smi or no NVIDIA GPU, unless RINGSIDE_GPU_TESTS_REQUIRE_DEVICE=1.
"""
import json
import os
import shutil
import subprocess
import sys

# nvidia-smi field, ringside field, unit scale to ringside's unit, tolerance (abs, rel)
FIELDS = [
    ("name", "name", None, None),
    ("pci.bus_id", "pci", None, None),
    ("memory.total", "vram_total_bytes", 1 << 20, (1 << 20, 0.0)),
    ("memory.reserved", "vram_reserved_bytes", 1 << 20, (1 << 20, 0.0)),
    ("memory.used", "vram_used_bytes", 1 << 20, (64 << 20, 0.02)),
    ("utilization.gpu", "busy_pct", 1, (10, 0.0)),
    ("utilization.memory", "mem_busy_pct", 1, (10, 0.0)),
    ("temperature.gpu", "temp_c", 1, (3, 0.0)),
    ("power.draw", "power_w", 1, (15, 0.15)),
    ("enforced.power.limit", "power_cap_w", 1, (1, 0.0)),
    ("clocks.sm", "sclk_mhz", 1, (0, 0.25)),
    ("clocks.mem", "mclk_mhz", 1, (0, 0.05)),
    ("pcie.link.gen.current", "pcie_gen", 1, (0, 0.0)),
    ("pcie.link.width.current", "pcie_width", 1, (0, 0.0)),
    ("compute_cap", "arch", None, None),
]


def skip(msg):
    if os.environ.get("RINGSIDE_GPU_TESTS_REQUIRE_DEVICE") == "1":
        print(f"FAIL: {msg}")
        sys.exit(1)
    print(f"SKIP: {msg}")
    sys.exit(77)


def smi():
    query = ",".join(f[0] for f in FIELDS)
    out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.strip().splitlines():
        vals = [v.strip() for v in line.split(",")]
        rows.append(dict(zip((f[0] for f in FIELDS), vals)))
    return rows


# Other readings of the same quantity that nvidia-smi may offer (newer drivers): NVML's power
# is a one-second average on Ampere and later, nvidia-smi's power.draw may be either.
ALTERNATES = {"power.draw": ["power.draw.average", "power.draw.instant"]}


def smi_alternates():
    """{field: [values per GPU]} for the alternates this nvidia-smi knows."""
    out = {}
    for alts in ALTERNATES.values():
        for alt in alts:
            r = subprocess.run(["nvidia-smi", f"--query-gpu={alt}", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                out[alt] = [v.strip() for v in r.stdout.strip().splitlines()]
    return out


def norm_pci(s):
    dom, rest = s.lower().split(":", 1)
    return f"{int(dom, 16):04x}:{rest}"


def close_enough(got, want, scale, tol):
    try:
        w = float(want) * scale
    except ValueError:
        return False
    return abs(float(got) - w) <= max(tol[0], tol[1] * abs(w))


def compare(row, gpu, alts):
    bad, lines = 0, []
    for smi_key, key, scale, tol in FIELDS:
        want, got = row[smi_key], gpu.get(key)
        if smi_key == "pci.bus_id":
            want = norm_pci(want)
        if smi_key == "compute_cap":
            want = "sm_" + want.replace(".", "")
        if want in ("[N/A]", "[Not Supported]", "N/A"):
            ok = got is None  # nvidia-smi has no value: ringside must say n/a too, not 0
            lines.append((smi_key, want, got, "ok" if ok else "MISMATCH (should be n/a)"))
            bad += not ok
            continue
        if scale is None:
            ok = str(got) == want
        elif got is None:
            ok = False
        else:
            ok = any(close_enough(got, v, scale, tol) for v in [want] + alts.get(smi_key, []))
        bad += not ok
        lines.append((smi_key, want, got, "ok" if ok else "MISMATCH"))
    return bad, lines


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not shutil.which("nvidia-smi"):
        skip("nvidia-smi not found")
    try:
        rows = smi()
    except subprocess.CalledProcessError as e:
        skip(f"nvidia-smi failed: {e.stderr.strip()}")
    if not rows:
        skip("no NVIDIA GPU")
    probe = json.loads(subprocess.run([sys.argv[1], "probe", "--json", "--telemetry", "nvml"],
                                      capture_output=True, text=True, check=True).stdout)
    rows_after = smi()  # fast-moving values pass when either reading agrees
    alt_values = smi_alternates()
    prov = {p["name"]: p for p in probe["providers"]}
    if prov.get("nvml", {}).get("status") != "ok":
        print(f"FAIL: the nvml provider is not ok: {prov.get('nvml')}")
        return 1
    gpus = {g["pci"]: g for g in probe["gpus"]}
    failures = 0
    for i, (row, row2) in enumerate(zip(rows, rows_after)):
        alts = {k: [alt_values[a][i] for a in v if a in alt_values and i < len(alt_values[a])]
                for k, v in ALTERNATES.items()}
        pci = norm_pci(row["pci.bus_id"])
        gpu = gpus.get(pci)
        if gpu is None:
            print(f"FAIL: {pci} from nvidia-smi is missing in the probe")
            failures += 1
            continue
        bad1, lines1 = compare(row, gpu, alts)
        bad2, lines2 = compare(row2, gpu, alts)
        lines = [a if a[3] == "ok" else b for a, b in zip(lines1, lines2)]
        bad = sum(1 for line in lines if line[3] != "ok")
        print(f"GPU {pci}:")
        for key, want, got, verdict in lines:
            print(f"  {key:26} nvidia-smi {want:>24}  ringside {str(got):>24}  {verdict}")
        failures += bad
    print(f"nvml sample: {prov['nvml']['last_sample_us']:.1f} us last, "
          f"{prov['nvml']['max_sample_us']:.1f} us max, for {prov['nvml']['gpus']} GPU(s)")
    print("PASS" if failures == 0 else f"FAIL: {failures} field(s) disagree")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
