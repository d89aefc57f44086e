"""Shared by the dump tests: run the CLI, read a reference trace with h5py, write dumps with numpy
in the layouts engines use (llama.cpp graph tensors as .npy, HF module hooks as safetensors)."""
import json
import os
import struct
import subprocess

import h5py
import numpy as np

DRIFTSCOPE = "driftscope"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "fixtures")
LLAMA_GGUF = os.path.join(FIXTURES, "models", "llama-tiny.gguf")
LLAMA_HF = os.path.join(FIXTURES, "models", "llama-tiny")
PROMPT = [1, 5, 9, 42, 7]
DECODE_STEPS = 2


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


def reference_trace(model, path):
    """A run whose trace holds every reference stage of the prompt and the decode steps."""
    rc, out, err = run("run", "--model", model, "--candidate", "cpu-f16", "--mode", "chained",
                       "--tokens", ",".join(map(str, PROMPT)), "--decode-steps", str(DECODE_STEPS),
                       "--trace", path)
    assert rc in (0, 1), out + err
    return path


def read_reference(path):
    """{(step, layer, stage): f64 array of the reference} plus the run's model config and tokens."""
    stages = {}
    with h5py.File(path, "r") as f:
        run_json = json.loads(f.attrs["run"])
        pool = f["tensors/ref"]
        for r in f["summary"][:]:
            if int(r["ref_offset"]) < 0:
                continue
            key = (int(r["step"]), int(r["layer"]), r["stage"].decode())
            if key in stages:
                continue
            shape = tuple(int(d) for d in r["shape"][:int(r["rank"])])
            n = int(r["numel"])
            stages[key] = pool[int(r["ref_offset"]):int(r["ref_offset"]) + n].reshape(shape)
        tokens = json.loads(f["result"][:].tobytes())["tokens"]
    return stages, run_json["model"], tokens


def rows(a, width):
    return np.asarray(a).reshape(-1, width)


def llama_permute(x, heads):
    """HF rows -> llama.cpp's (GGUF Q/K rows permuted for NORMAL RoPE): per head, (2, d/2) -> (d/2, 2)."""
    t = x.shape[0]
    d = x.shape[1] // heads
    return x.reshape(t, heads, 2, d // 2).swapaxes(2, 3).reshape(t, heads, d)


def write_llama_cpp_dump(stages, model, out_dir, tokens, plant=None):
    """llama.cpp's eval-callback names, one directory per llama_decode call, shape = reversed ne.
    `plant` = (step, layer, graph name): add an error there."""
    h, hd = model["hidden"], model["head_dim"]
    nh, nkv = model["n_heads"], model["n_kv_heads"]
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "tokens.npy"), np.asarray(tokens, dtype=np.int64))
    steps = sorted({k[0] for k in stages})
    for s in steps:
        d = os.path.join(out_dir, f"step{s}")
        os.makedirs(d, exist_ok=True)

        def save(name, value):
            v = np.ascontiguousarray(value, dtype=np.float32)
            if plant == (s, name):
                v = v.copy()
                v.flat[3] += 0.5
            np.save(os.path.join(d, name + ".npy"), v)

        for layer in range(model["n_layers"]):
            g = lambda stage: stages[(s, layer, stage)]
            save(f"attn_norm-{layer}", rows(g("attn_norm"), h))
            save(f"Qcur-{layer}", llama_permute(rows(g("q_rope"), nh * hd), nh))
            save(f"Kcur-{layer}", llama_permute(rows(g("k_rope"), nkv * hd), nkv))
            save(f"Vcur-{layer}", rows(g("v"), nkv * hd))
            save(f"kqv_out-{layer}", rows(g("attn"), nh * hd))
            save(f"ffn_inp-{layer}", rows(g("residual_1"), h))
            save(f"ffn_out-{layer}", rows(g("down"), h))
            save(f"l_out-{layer}", rows(g("residual_2"), h))
        save("result_norm", rows(stages[(s, -1, "final_norm")], h))
        save("result_output", rows(stages[(s, -1, "logits")], model["vocab"]))


def write_safetensors(path, tensors):
    """The safetensors container by hand (no torch): u64 header length, JSON header, data."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.float64): "F64",
             np.dtype(np.int64): "I64", np.dtype(np.int32): "I32"}
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        b = a.tobytes()
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """{name: array}; BF16 tensors are widened to f32 exactly."""
    names = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        if e["dtype"] == "BF16":  # numpy has no bfloat16: its bits are an f32's upper half
            bits = np.frombuffer(data[8 + n + b:8 + n + end], dtype=np.uint16).astype(np.uint32) << 16
            out[name] = bits.view(np.float32).reshape(e["shape"])
            continue
        out[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype=names[e["dtype"]]).reshape(e["shape"])
    return out


HF_MODULES = {  # catalog stage -> module name (@input: the module's input), as tools/dump_hf.py hooks
    "attn_norm": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
    "v": "self_attn.v_proj", "attn": "self_attn.o_proj@input", "attn_out": "self_attn.o_proj",
    "residual_1": "post_attention_layernorm@input", "ffn_norm": "post_attention_layernorm",
    "gate": "mlp.gate_proj", "up": "mlp.up_proj", "ffn_act": "mlp.down_proj@input",
    "down": "mlp.down_proj", "q_norm": "self_attn.q_norm", "k_norm": "self_attn.k_norm",
}


def write_hf_dump(stages, model, out_dir, tokens, plant=None):
    """One safetensors file per forward call, tensors [1, tokens, width] under module names.
    `plant` = (step, tensor name): add an error there."""
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "tokens.safetensors"),
                      {"input_ids": np.asarray([tokens], dtype=np.int64)})
    for s in sorted({k[0] for k in stages}):
        t = {}
        for (step, layer, stage), v in stages.items():
            if step != s:
                continue
            if layer < 0:
                name = {"embed": "model.embed_tokens", "final_norm": "model.norm", "logits": "lm_head"}[stage]
            elif stage == "residual_2":
                name = f"model.layers.{layer}"
            elif stage in HF_MODULES:
                name = f"model.layers.{layer}.{HF_MODULES[stage]}"
            else:
                continue
            a = np.asarray(v, dtype=np.float32).reshape(1, v.shape[0], -1).copy()
            if plant == (s, name):
                a.flat[3] += 0.5
            t[name] = a
        write_safetensors(os.path.join(out_dir, f"step{s}.safetensors"), t)


def summary_rows(trace):
    with h5py.File(trace, "r") as f:
        return [(int(r["step"]), int(r["layer"]), r["stage"].decode(), int(r["status"]), float(r["max_ulp"]))
                for r in f["summary"][:]]


def hf_python_missing(python):
    """Why `python` cannot run tools/dump_hf.py (None when it imports torch, transformers and
    safetensors: their versions are printed)."""
    probe = "import torch, transformers, safetensors; print(torch.__version__, transformers.__version__)"
    try:
        p = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    except OSError as e:
        return f"{python}: {e}"
    if p.returncode != 0:
        return f"{python} cannot import torch, transformers and safetensors ({p.stderr.strip().splitlines()[-1]})"
    print(f"{python}: torch {p.stdout.split()[0]}, transformers {p.stdout.split()[1]}")
    return None
