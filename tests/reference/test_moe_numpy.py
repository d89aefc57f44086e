"""The reference's mixture-of-experts FFN against an independent float64 numpy computation.

Usage: test_moe_numpy.py MOE_DUMP TMP_DIR

For each MoE preset (and Qwen3-MoE with norm_topk_prob false), moe_dump writes the model as a
safetensors checkpoint and the reference's MoE stages of every layer. This script reads the weights
by the checkpoint's HF names and recomputes, from the reference's ffn_norm, the router logits, the
routing (config.json's rule), each expert's SwiGLU and the weighted combine, and requires agreement
to float64 rounding; for Qwen3-Next (model_type qwen3_next) also the shared expert, its sigmoid gate
and their sum with the routed output. Hand-built rows of logits with exact ties check the documented tie order
(lower expert index first) and both rules' weights.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16}


def read_safetensors(path):
    raw = Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DTYPES[h["dtype"]]).reshape(h["shape"]).astype(np.float64)
    return out


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def top_k(values, k):
    # Highest first; equal values keep index order (a stable sort of the negated values).
    return np.argsort(-values, kind="stable")[:k]


def route(logits, k, rule, norm):
    if rule == "softmax_topk":
        p = softmax(logits)
        ids = top_k(p, k)
        w = p[ids]
        return ids, (w / w.sum() if norm else w)
    ids = top_k(logits, k)
    return ids, softmax(logits[ids])


def silu(x):
    return x / (1.0 + np.exp(-x))


def moe_layer(x, w, layer, cfg):
    mixtral = cfg["model_type"] == "mixtral"
    pre = f"model.layers.{layer}.block_sparse_moe" if mixtral else f"model.layers.{layer}.mlp"
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    k = cfg["num_experts_per_tok"]
    rule = "topk_softmax" if mixtral else "softmax_topk"
    norm = cfg.get("norm_topk_prob", False)
    logits = x @ w[f"{pre}.gate.weight"].T
    ids, weights, out = [], [], np.zeros_like(x)
    for t in range(x.shape[0]):
        i, wt = route(logits[t], k, rule, norm)
        ids.append(i)
        weights.append(wt)
        for e, we in zip(i, wt):
            g = w[f"{pre}.experts.{e}.{names[0]}.weight"] @ x[t]
            u = w[f"{pre}.experts.{e}.{names[1]}.weight"] @ x[t]
            out[t] += we * (w[f"{pre}.experts.{e}.{names[2]}.weight"] @ (silu(g) * u))
    return logits, np.array(ids), np.array(weights), out


def shared_expert(x, w, layer):
    """Qwen3NextSparseMoeBlock's shared expert: sigmoid(x . shared_expert_gate) * SwiGLU(x)."""
    pre = f"model.layers.{layer}.mlp"
    g = x @ w[f"{pre}.shared_expert.gate_proj.weight"].T
    u = x @ w[f"{pre}.shared_expert.up_proj.weight"].T
    out = (silu(g) * u) @ w[f"{pre}.shared_expert.down_proj.weight"].T
    gate = 1.0 / (1.0 + np.exp(-(x @ w[f"{pre}.shared_expert_gate.weight"].T)))
    return out, gate


def close(name, got, want, failures, case):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        failures.append(f"{case}: {name}: shape {got.shape}, numpy {want.shape}")
        return
    err = np.max(np.abs(got - want) / (np.abs(want) + 1e-300)) if got.size else 0.0
    # Both sides sum in float64 but in different orders: agreement to a few ulps of the terms.
    scale = np.max(np.abs(want)) if want.size else 0.0
    if not np.allclose(got, want, rtol=1e-10, atol=1e-12 * max(scale, 1.0)):
        failures.append(f"{case}: {name}: max relative difference {err:.3g}")


def check_block(dump, tmp, preset, extra, failures):
    case = preset + (" " + " ".join(extra) if extra else "")
    out = tmp / case.replace(" ", "_")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([dump, "block", preset, "1", str(out), *extra], check=True)
    cfg = json.loads((out / "model" / "config.json").read_text())
    w = read_safetensors(out / "model" / "model.safetensors")
    stages = json.loads((out / "stages.json").read_text())["layers"]
    picked = 0
    for layer, s in enumerate(stages):
        x = np.array(s["ffn_norm"])
        logits, ids, weights, moe = moe_layer(x, w, layer, cfg)
        close("router_logits", s["router_logits"], logits, failures, f"{case} layer {layer}")
        if not np.array_equal(np.array(s["expert_ids"], dtype=np.int64), ids):
            failures.append(f"{case} layer {layer}: expert_ids {s['expert_ids']}, numpy {ids.tolist()}")
            continue
        close("expert_weights", s["expert_weights"], weights, failures, f"{case} layer {layer}")
        close("moe_out", s["moe_out"], moe, failures, f"{case} layer {layer}")
        if cfg["model_type"] == "qwen3_next":
            sh, gate = shared_expert(x, w, layer)
            close("shexp_out", s["shexp_out"], sh, failures, f"{case} layer {layer}")
            close("shexp_gate", s["shexp_gate"], gate, failures, f"{case} layer {layer}")
            close("ffn_out", s["ffn_out"], np.array(s["moe_out"]) + gate * sh, failures, f"{case} layer {layer}")
        elif "shexp_out" in s:
            failures.append(f"{case} layer {layer}: a shared expert in a {cfg['model_type']} model")
        picked += len(set(ids.flatten().tolist()))
    print(f"{case}: {len(stages)} layers, {picked} (layer, expert) pairs used, "
          f"rule {'topk_softmax' if cfg['model_type'] == 'mixtral' else 'softmax_topk'}, "
          f"norm_topk_prob {cfg.get('norm_topk_prob')}")


# (case, rule, norm, k, logits, ids wanted): exact ties, resolved to the lower index.
TIES = [
    ("all equal, top-2", "softmax_topk", True, 2, [0.5, 0.5, 0.5, 0.5], [0, 1]),
    ("tie at the k-th place", "topk_softmax", False, 2, [1.0, 3.0, 2.0, 2.0], [1, 2]),
    ("tie across the top", "softmax_topk", False, 3, [2.0, -1.0, 2.0, 0.0, 2.0], [0, 2, 4]),
    ("tie below the cut", "topk_softmax", False, 1, [0.0, 4.0, 0.0, 0.0], [1]),
]


def check_ties(dump, failures):
    for case, rule, norm, k, logits, want in TIES:
        res = subprocess.run([dump, "route", rule, "1" if norm else "0", str(k)], input=json.dumps([logits]),
                             capture_output=True, text=True, check=True)
        got = json.loads(res.stdout)[0]
        ids, weights = route(np.array(logits), k, rule, norm)
        if got["ids"] != want or ids.tolist() != want:
            failures.append(f"ties: {case}: reference {got['ids']}, numpy {ids.tolist()}, wanted {want}")
        close("weights", got["weights"], weights, failures, f"ties: {case}")


def main():
    dump, tmp = sys.argv[1], Path(sys.argv[2])
    tmp.mkdir(parents=True, exist_ok=True)
    failures = []
    for preset, extra in [("qwen3moe-tiny", []), ("qwen3moe-tiny", ["--no-norm"]), ("qwen3moe-tails-tiny", []),
                          ("mixtral-tiny", []), ("qwen3next-tiny", [])]:
        check_block(dump, tmp, preset, extra, failures)
    check_ties(dump, failures)
    for f in failures:
        print(f"FAIL {f}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
