"""Checks a trained ringside model from outside ringside, the way its users read it.

usage: check_model.py SAFETENSORS PREDICTIONS [--onnx FILE] [--device cpu|cuda]

SAFETENSORS is the checkpoint's .safetensors file and PREDICTIONS the JSON lines of
`ringside predict --features` on some data. The model is rebuilt as a torch.nn.Sequential from
the safetensors file alone (its header and tensors read with struct and json, as
docs/checkpoints.md shows), the stored normalisation is applied to each line's features, and the outputs must
reproduce ringside's within 1e-5 relative (float64, or float32 on --device cuda, against a
float32 backend's predictions: there, and for the ONNX graph, which computes in float32, the
bound is 1e-5 of the larger of the value and the outputs' RMS). With --onnx, the ONNX export
must pass onnx.checker (full check, shape inference included), and its graph, evaluated node
by node with numpy in float32, must give the same outputs. Prints what it compared; exits 1 on
the first mismatch.
"""
import argparse
import json
import math
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__")
    tensors = {}
    for name, e in head.items():
        a, b = e["data_offsets"]
        assert e["dtype"] == "F32", (name, e["dtype"])
        buf = bytearray(raw[8 + n + a:8 + n + b])
        tensors[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(e["shape"])
    return tensors, meta


def build_model(tensors, meta):
    arch = meta["architecture"]
    widths = [arch["inputs"], *arch["hidden"], 1]
    act = torch.nn.SiLU if arch["activation"] == "silu" else torch.nn.ReLU
    layers = []
    for l in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[l], widths[l + 1]))
        if l < len(widths) - 2:
            layers.append(act())
    model = torch.nn.Sequential(*layers)
    model.load_state_dict(tensors)
    return model


def fail(msg):
    print("check_model: FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def compare(what, got, want, rtol, scale=0.0):
    """|got - want| <= rtol * max(|want|, scale) everywhere."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    bound = rtol * np.maximum(np.abs(want), scale)
    bad = np.abs(got - want) > bound
    worst = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), max(scale, 1e-300))))
    print(f"check_model: {what}: {len(want)} rows, largest relative difference {worst:.3g}"
          f" (bound {rtol:g})")
    if bad.any():
        i = int(np.argmax(bad))
        fail(f"{what}: row {i}: {got[i]!r} against {want[i]!r}")


def onnx_eval(model, x):
    """The graph's nodes in order, in float32 as an ONNX runtime computes them."""
    from onnx import numpy_helper
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env["features"] = x.astype(np.float32)
    ops = {
        "Sub": lambda a, b: a - b,
        "Div": lambda a, b: a / b,
        "Mul": lambda a, b: a * b,
        "Add": lambda a, b: a + b,
        "Relu": lambda a: np.maximum(a, np.float32(0)),
        "Sigmoid": lambda a: (1 / (1 + np.exp(-a))).astype(np.float32),
    }
    for node in model.graph.node:
        ins = [env[i] for i in node.input]
        if node.op_type == "Gemm":
            attrs = {a.name: a.i for a in node.attribute}
            assert attrs.get("transB") == 1, node
            out = ins[0] @ ins[1].T + ins[2]
        else:
            out = ops[node.op_type](*ins)
        env[node.output[0]] = out.astype(np.float32)
    return {o.name: env[o.name] for o in model.graph.output}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("safetensors")
    ap.add_argument("predictions")
    ap.add_argument("--onnx")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    tensors, st_meta = read_safetensors(args.safetensors)
    meta = json.loads(st_meta["ringside"])
    model = build_model(tensors, meta)
    norm = meta["normalization"]
    mean = np.array([f["mean"] for f in norm["features"]])
    std = np.array([f["std"] for f in norm["features"]])
    y_mean, y_std = float(st_meta["target_mean"]), float(st_meta["target_std"])
    bce = meta["architecture"]["loss"] == "bce"

    rows = [json.loads(line) for line in open(args.predictions)]
    if not rows:
        fail("no predictions")
    x = np.array([r["features"] for r in rows], dtype=np.float64)
    out = np.array([r["output"] for r in rows])
    value = np.array([r["probability" if bce else "return_bps"] for r in rows])

    xn = (x - mean) / std
    if args.device == "cpu":
        model = model.double()
        with torch.no_grad():
            got = model(torch.from_numpy(xn)).numpy()[:, 0]
        scale = 0.0
    else:  # the GPU: float32, as the GPU backend computes
        model = model.to(args.device)
        with torch.no_grad():
            got = model(torch.from_numpy(xn).float().to(args.device)).double().cpu().numpy()[:, 0]
        scale = float(np.sqrt(np.mean(out ** 2)))
    compare(f"PyTorch {torch.__version__} ({args.device}) output", got, out, 1e-5, scale)
    unscaled = 1 / (1 + np.exp(-got)) if bce else got * y_std + y_mean
    compare("PyTorch " + ("probability" if bce else "return_bps"), unscaled, value, 1e-5,
            scale * (1 if bce else y_std))

    if args.onnx:
        import onnx
        m = onnx.load(args.onnx)
        onnx.checker.check_model(m, full_check=True)
        print(f"check_model: onnx.checker {onnx.__version__}: {args.onnx} is valid "
              f"(IR {m.ir_version}, opset {m.opset_import[0].version})")
        props = {p.key: p.value for p in m.metadata_props}
        if props.get("features", "").split(",") != [f["name"] for f in norm["features"]]:
            fail("the ONNX file's features are not the metadata's")
        res = onnx_eval(m, x)
        # float32 throughout: bounded by float32's rounding against the outputs' scale
        rms = float(np.sqrt(np.mean(out ** 2)))
        compare("ONNX output", res["output"][:, 0], out, 1e-5, rms)
        second = "probability" if bce else "return_bps"
        if second not in res:
            fail(f"the ONNX file has no output {second}")
        compare("ONNX " + second, res[second][:, 0], value, 1e-5, rms * (1 if bce else y_std))
    print("check_model: ok")


if __name__ == "__main__":
    main()
