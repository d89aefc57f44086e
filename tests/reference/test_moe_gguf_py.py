"""Our MoE GGUFs read by gguf-py's GGUFReader (written apart from our reader), checked for what
llama.cpp's loaders create for the architecture: the expert keys, and every block's router and
stacked expert tensors under llama.cpp's names with the ggml shapes it asks for
(llama_model_qwen3moe::load_arch_tensors: ffn_gate_inp {n_embd, n_expert}, ffn_{gate,up}_exps
{n_embd, n_ff_exp, n_expert}, ffn_down_exps {n_ff_exp, n_embd, n_expert}; a llama MoE (Mixtral)
the same with n_ff_exp = feed_forward_length; llama_model_qwen3next::load_arch_tensors adds, in
every layer, ffn_gate_inp_shexp {n_embd}, ffn_{gate,up}_shexp {n_embd, n_ff_shexp}, ffn_down_shexp
{n_ff_shexp, n_embd}, and in its linear-attention layers the fused ssm_in {n_embd, 2 key_dim + 2
value_dim} and ssm_beta_alpha {n_embd, 2 n_v_heads}, the full-attention ones a q of 2 q_dim).

Usage: test_moe_gguf_py.py MKFIXTURE TMP_DIR VENV_DIR
The venv (gguf-py on Debian's numpy) is the one test_dequant_gguf_py.py makes; no network: skip.
"""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dequant_gguf_py import venv_python  # noqa: E402

PRESETS = {"qwen3moe-tiny": "qwen3moe", "mixtral-tiny": "llama", "qwen3next-tiny": "qwen3next"}
ATTN = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm"]
# Qwen3-Next: llama.cpp's names of its linear-attention (GDN) and full-attention layers.
GDN = ["attn_norm", "post_attention_norm", "ssm_conv1d", "ssm_dt", "ssm_a", "ssm_norm", "ssm_out"]
FULL = ["attn_norm", "post_attention_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
        "attn_k_norm"]


def scalar(fields, key):
    return int(fields[key].parts[-1][0])


def qwen3next_block(f, i, n_embd):
    """llama.cpp's qwen3next tensors of block i beyond the routed experts, with their ggml shapes
    (None: present, any shape); full attention every full_attention_interval-th layer (4 if unset)."""
    a = "qwen3next"
    n_ff_shexp = scalar(f, f"{a}.expert_shared_feed_forward_length")
    interval = scalar(f, f"{a}.full_attention_interval") if f"{a}.full_attention_interval" in f else 4
    want = {f"blk.{i}.ffn_gate_inp_shexp.weight": [n_embd],
            f"blk.{i}.ffn_gate_shexp.weight": [n_embd, n_ff_shexp],
            f"blk.{i}.ffn_up_shexp.weight": [n_embd, n_ff_shexp],
            f"blk.{i}.ffn_down_shexp.weight": [n_ff_shexp, n_embd]}
    if (i + 1) % interval == 0:
        for t in FULL:
            want[f"blk.{i}.{t}.weight"] = None
        return want
    d_state, n_group = scalar(f, f"{a}.ssm.state_size"), scalar(f, f"{a}.ssm.group_count")
    n_v, value_dim = scalar(f, f"{a}.ssm.time_step_rank"), scalar(f, f"{a}.ssm.inner_size")
    key_dim = d_state * n_group
    want[f"blk.{i}.ssm_in.weight"] = [n_embd, 2 * key_dim + 2 * value_dim]
    want[f"blk.{i}.ssm_beta_alpha.weight"] = [n_embd, 2 * n_v]
    for t in GDN:
        name = f"blk.{i}.{t}" if t == "ssm_a" else f"blk.{i}.{t}.bias" if t == "ssm_dt" else f"blk.{i}.{t}.weight"
        want[name] = None
    return want


def check(tmp):
    from gguf import GGUFReader

    failures = []
    for preset, arch in PRESETS.items():
        path = tmp / f"{preset}.gguf"
        r = GGUFReader(str(path))
        f = r.fields
        got_arch = bytes(f["general.architecture"].parts[-1]).decode()
        if got_arch != arch:
            failures.append(f"{preset}: general.architecture {got_arch}, llama.cpp's is {arch}")
            continue
        keys = ["block_count", "embedding_length", "feed_forward_length", "expert_count", "expert_used_count",
                "attention.layer_norm_rms_epsilon"]
        if arch in ("qwen3moe", "qwen3next"):
            keys.append("expert_feed_forward_length")
        if arch == "qwen3next":
            keys += ["expert_shared_feed_forward_length", "ssm.conv_kernel", "ssm.state_size", "ssm.group_count",
                     "ssm.time_step_rank", "ssm.inner_size"]
        missing = [k for k in keys if f"{arch}.{k}" not in f]
        if missing:
            failures.append(f"{preset}: missing keys {missing}")
            continue
        n_embd, n_expert = scalar(f, f"{arch}.embedding_length"), scalar(f, f"{arch}.expert_count")
        n_ff_exp = scalar(f, f"{arch}.feed_forward_length" if arch == "llama" else f"{arch}.expert_feed_forward_length")
        if not 0 < scalar(f, f"{arch}.expert_used_count") <= n_expert:
            failures.append(f"{preset}: expert_used_count out of range")
        shapes = {t.name: [int(d) for d in t.shape] for t in r.tensors}
        want = {}
        for i in range(scalar(f, f"{arch}.block_count")):
            want[f"blk.{i}.ffn_gate_inp.weight"] = [n_embd, n_expert]
            want[f"blk.{i}.ffn_gate_exps.weight"] = [n_embd, n_ff_exp, n_expert]
            want[f"blk.{i}.ffn_up_exps.weight"] = [n_embd, n_ff_exp, n_expert]
            want[f"blk.{i}.ffn_down_exps.weight"] = [n_ff_exp, n_embd, n_expert]
            if arch == "qwen3next":
                want.update(qwen3next_block(f, i, n_embd))
            else:
                for t in ATTN:
                    want.setdefault(f"blk.{i}.{t}.weight", None)
            for dense in ("ffn_gate", "ffn_up", "ffn_down"):
                if f"blk.{i}.{dense}.weight" in shapes:
                    failures.append(f"{preset}: dense blk.{i}.{dense}.weight in a MoE file")
        for name, shape in want.items():
            if name not in shapes:
                failures.append(f"{preset}: llama.cpp requires tensor {name}")
            elif shape is not None and shapes[name] != shape:
                failures.append(f"{preset}: {name} has ggml shape {shapes[name]}, llama.cpp creates {shape}")
        print(f"{preset}: {arch}, {n_expert} experts of {n_ff_exp}, {len(want)} block tensors checked")
    for x in failures:
        print(f"FAIL {x}")
    print(f"{len(failures)} failures")
    return 1 if failures else 0


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--check":
        sys.exit(check(Path(sys.argv[1])))
    mkfixture, tmp, venv = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    tmp.mkdir(parents=True, exist_ok=True)
    subprocess.run([mkfixture, "--out", str(tmp), *PRESETS], check=True, stdout=subprocess.DEVNULL)
    py = venv_python(venv)
    sys.exit(subprocess.run([str(py), __file__, str(tmp), "--check"]).returncode)


if __name__ == "__main__":
    main()
