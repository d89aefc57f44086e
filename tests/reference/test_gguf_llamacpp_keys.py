"""Each fixture GGUF read by gguf-py's GGUFReader (written apart from our reader), checked for what
llama.cpp needs before it loads a model of its architecture: the metadata keys its hparams loader
requires (llama-model.cpp, `ml.get_key(...)` without a default) and a vocabulary kind, and the
tensors every block of the architecture has.

Usage: test_gguf_llamacpp_keys.py FIXTURES_MODELS_DIR VENV_DIR
The venv (gguf-py on Debian's numpy) is the one test_dequant_gguf_py.py makes; no network: skip.
"""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_dequant_gguf_py import skip, venv_python  # noqa: E402

# Keys llama.cpp reads without a default for every architecture, then per architecture.
COMMON = ["general.architecture", "tokenizer.ggml.model", "{a}.context_length", "{a}.embedding_length",
          "{a}.block_count", "{a}.feed_forward_length", "{a}.attention.head_count"]
PER_ARCH = {
    "llama": ["{a}.attention.layer_norm_rms_epsilon"],
    "qwen2": ["{a}.attention.layer_norm_rms_epsilon"],
    "qwen3": ["{a}.attention.layer_norm_rms_epsilon"],
    "gpt2": ["{a}.attention.layer_norm_epsilon"],
}
BLOCK_TENSORS = {
    "llama": ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"],
    "qwen2": ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"],
    "qwen3": ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm", "attn_output", "ffn_norm",
              "ffn_gate", "ffn_up", "ffn_down"],
    "gpt2": ["attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"],
}
# qwen35 (llama.cpp's dense Qwen3.5 hybrid): llama_model_qwen35's load_arch_hparams / tensors. The
# rope sections are read without a default; the GDN tensors are those of its recurrent layers
# (every full_attention_interval-th layer is attention instead).
PER_ARCH["qwen35"] = ["{a}.attention.layer_norm_rms_epsilon", "{a}.rope.dimension_sections", "{a}.ssm.conv_kernel",
                      "{a}.ssm.inner_size", "{a}.ssm.state_size", "{a}.ssm.time_step_rank", "{a}.ssm.group_count"]
QWEN35_GDN = ["attn_norm", "post_attention_norm", "attn_qkv", "attn_gate", "ssm_conv1d", "ssm_dt", "ssm_a", "ssm_beta",
              "ssm_alpha", "ssm_norm", "ssm_out", "ffn_gate", "ffn_up", "ffn_down"]
QWEN35_ATTN = ["attn_norm", "post_attention_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
               "attn_k_norm", "ffn_gate", "ffn_up", "ffn_down"]
# llama.cpp's architecture of that name is the MoE model (it refuses a dense hybrid as having zero
# experts): no fixture may carry it.
NOT_LLAMACPP = {"qwen3next": "llama.cpp's qwen3next is the MoE layout; the dense hybrid is its qwen35"}


def block_tensors(arch, fields, blocks):
    """The tensors llama.cpp creates for every block of `arch`, with their GGUF suffix."""
    if arch != "qwen35":
        return [f"blk.{i}.{t}.weight" for i in range(blocks) for t in BLOCK_TENSORS[arch]]
    interval = int(fields["qwen35.full_attention_interval"].parts[-1][0]) if "qwen35.full_attention_interval" in fields else 4
    out = []
    for i in range(blocks):
        for t in (QWEN35_ATTN if (i + 1) % interval == 0 else QWEN35_GDN):
            out.append(f"blk.{i}.{t}" if t == "ssm_a" else f"blk.{i}.{t}.bias" if t == "ssm_dt" else f"blk.{i}.{t}.weight")
    return out


def check(models):
    from gguf import GGUFReader

    failures, checked = [], 0
    for path in sorted(models.glob("*.gguf")):
        r = GGUFReader(str(path))
        fields = r.fields
        arch = bytes(fields["general.architecture"].parts[-1]).decode()
        if arch in NOT_LLAMACPP:
            failures.append(f"{path.name}: architecture {arch}: {NOT_LLAMACPP[arch]}")
            continue
        if arch not in PER_ARCH:
            failures.append(f"{path.name}: architecture {arch} has no entry in this test")
            continue
        for key in COMMON + PER_ARCH[arch]:
            key = key.format(a=arch)
            if key not in fields:
                failures.append(f"{path.name}: llama.cpp requires {key}")
        if "tokenizer.ggml.model" in fields:
            kind = bytes(fields["tokenizer.ggml.model"].parts[-1]).decode()
            if kind not in ("none", "no_vocab", "llama", "gpt2"):
                failures.append(f"{path.name}: tokenizer.ggml.model {kind!r} is no vocabulary kind llama.cpp knows")
        names = {t.name for t in r.tensors}
        blocks = int(fields[f"{arch}.block_count"].parts[-1][0])
        for need in ["token_embd.weight", "output_norm.weight"] + block_tensors(arch, fields, blocks):
            if need not in names:
                failures.append(f"{path.name}: llama.cpp requires tensor {need}")
        checked += 1
    for f in failures:
        print(f"FAIL {f}")
    print(f"{checked} fixture GGUFs checked against llama.cpp's required keys and tensors; {len(failures)} failures")
    return 1 if failures or checked == 0 else 0


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--check":
        sys.exit(check(Path(sys.argv[1])))
    models, venv = Path(sys.argv[1]), Path(sys.argv[2])
    py = venv_python(venv)
    sys.exit(subprocess.run([str(py), __file__, str(models), "--check"]).returncode)


if __name__ == "__main__":
    main()
