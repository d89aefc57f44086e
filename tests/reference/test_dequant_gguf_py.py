"""Driftscope's GGUF dequantisation against gguf-py's, bit for bit, on files a real llama.cpp wrote;
and, with --written, on the Q4_K_M files driftscope-mkfixture writes.

Usage: test_dequant_gguf_py.py DEQUANT_DUMP PEERS_DIR VENV_DIR
       test_dequant_gguf_py.py DEQUANT_DUMP --written MKFIXTURE VENV_DIR

Every tensor of every quants/llama256.*.gguf and models/llama256.q*.gguf under PEERS_DIR (the
shared llama.cpp peer folder) is decoded by dequant_dump (our reader) and by
gguf.quants.dequantize (the PyPI package `gguf`, written apart from ggml's C), and the two f32
arrays must hold the same bit patterns. gguf-py is installed at test time into VENV_DIR (kept
between runs); no network or no peer folder is a skip (exit 77) that says why, never a pass.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
# The newest gguf-py checked to import with Debian 12's numpy 1.24; --no-deps keeps that numpy.
GGUF_PY = "gguf==0.19.0"
# Every block type the quants/ folder holds; a file set that lost one must fail, not shrink the test.
EXPECTED_TYPES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                  "IQ4_NL", "IQ4_XS"}


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def venv_python(venv):
    """A python with numpy (Debian's) and gguf-py; created once per build directory."""
    py = venv / "bin" / "python"
    probe = [str(py), "-c", "import gguf.quants, numpy"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        skip(f"cannot create a venv at {venv}: {made.stderr.strip()}")
    pip = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", GGUF_PY],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        tail = (pip.stderr.strip().splitlines() or ["no output"])[-1]
        skip(f"cannot install {GGUF_PY} into {venv} (no network?): {tail}")
    checked = subprocess.run(probe, capture_output=True, text=True)
    if checked.returncode != 0:
        sys.exit(f"{GGUF_PY} does not import with this numpy: {checked.stderr.strip()}")
    return py


def peer_files(peers):
    files = sorted((peers / "quants").glob("llama256.*.gguf"))
    files += sorted((peers / "models").glob("llama256.q*.gguf"))
    if not files:
        skip(f"no llama256 GGUFs under {peers}")
    return files


# Presets written as Q4_K_M by --written: real widths (K-quants), tiny widths (their fallbacks), a
# fused QKV, a tied embedding, Mixtral's 8 experts and Qwen3-MoE's, a hybrid.
WRITTEN_PRESETS = ["llama-wide", "gpt2-wide", "qwen2-tiny", "gpt2-tiny", "mixtral-tiny", "qwen3moe-tiny",
                   "qwen35-tiny"]
WRITTEN_TYPES = {"Q4_K", "Q5_K", "Q6_K", "Q5_0", "Q5_1", "Q8_0"}


def q4_k_m_type(t, reader):
    """The type llama.cpp's `llama-quantize ... Q4_K_M` gives tensor `t` of the file `reader` reads
    (src/llama-quant.cpp, llama_tensor_get_type_impl), for the tensors these presets have: restated
    here apart from gguf_writer.cpp's."""
    name, cols = t.name, int(t.shape[0])
    # llama.cpp's tensor_allows_quantization: no vectors, router, conv kernel or position table.
    if len(t.shape) < 2 or "ffn_gate_inp" in name or "ssm_conv1d" in name or name.startswith("position_embd"):
        return "F32"
    names = [x.name for x in reader.tensors]
    arch = reader.fields["general.architecture"].contents()
    n_layer = int(reader.fields[f"{arch}.block_count"].contents())
    experts_field = reader.fields.get(f"{arch}.expert_count")
    n_expert = int(experts_field.contents()) if experts_field else 0
    layer = int(name.split(".")[1]) if name.startswith("blk.") else -1

    def more_bits(i, n):
        return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2

    kind = "Q4_K"
    if name == "output.weight" or (name == "token_embd.weight" and "output.weight" not in names):
        kind = "Q8_0" if cols % 256 else "Q6_K"
    elif ".attn_v." in name:
        v_layers = sorted(int(x.split(".")[1]) for x in names if ".attn_v." in x)
        kind = "Q8_0" if n_expert == 8 else "Q6_K" if more_bits(v_layers.index(layer), len(v_layers)) else "Q4_K"
    elif ".attn_k." in name and n_expert == 8:
        kind = "Q8_0"
    elif ".attn_output." in name and n_expert == 8:
        kind = "Q5_K"
    elif ".attn_qkv." in name:
        kind = "Q5_K"
    elif ".ffn_down" in name:
        kind = "Q6_K" if more_bits(layer, n_layer) else "Q4_K"
    if kind == "Q8_0" or cols % 256 == 0:
        return kind if cols % 32 == 0 else "F16"
    if cols % 32:
        return "F16"
    return {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}[kind]


def compare(dump_tool, files, expected_types=EXPECTED_TYPES, check_mix=False):
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize

    seen_types, tensors, failures = set(), 0, []
    with tempfile.TemporaryDirectory(prefix="dequant-") as tmp:
        for path in files:
            out = Path(tmp) / path.name
            run = subprocess.run([dump_tool, str(path), str(out)], capture_output=True, text=True)
            if run.returncode != 0:
                failures.append(f"{path.name}: dequant_dump failed: {run.stderr.strip()}")
                continue
            ours_types = dict(line.split() for line in (out / "types.txt").read_text().splitlines())
            reader = GGUFReader(str(path))
            for t in reader.tensors:
                kind = t.tensor_type.name
                seen_types.add(kind)
                if check_mix and kind != q4_k_m_type(t, reader):
                    failures.append(f"{path.name}: {t.name} {list(t.shape)} is {kind}; llama.cpp's Q4_K_M "
                                    f"makes it {q4_k_m_type(t, reader)}")
                if ours_types.get(t.name) != kind:
                    failures.append(f"{path.name}: {t.name}: type {ours_types.get(t.name)} here, "
                                    f"{kind} in gguf-py")
                    continue
                theirs = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
                ours = np.fromfile(out / f"{t.name}.f32", dtype="<f4")
                if ours.shape != theirs.shape:
                    failures.append(f"{path.name}: {t.name} ({kind}): {ours.size} elements here, "
                                    f"{theirs.size} in gguf-py")
                    continue
                differ = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
                if differ.size:
                    i = differ[0]
                    failures.append(f"{path.name}: {t.name} ({kind}): {differ.size} of {ours.size} elements differ, "
                                    f"first at {i}: {ours[i]!r} here, {theirs[i]!r} in gguf-py")
                tensors += 1
    missing = expected_types - seen_types
    if missing:
        failures.append(f"no tensor of type {', '.join(sorted(missing))} in the files")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{tensors} tensors of {len(files)} files compared; types {', '.join(sorted(seen_types))}; "
          f"{len(failures)} failures")
    return 1 if failures else 0


def written(dump_tool, mkfixture, venv):
    """The Q4_K_M files mkfixture writes, decoded by gguf-py as by our reader, typed as llama.cpp's
    mix types them."""
    py = venv_python(venv)
    with tempfile.TemporaryDirectory(prefix="q4km-") as tmp:
        made = subprocess.run([mkfixture, "--out", tmp, "--gguf-type", "q4_k_m", "--gguf-only", *WRITTEN_PRESETS],
                              capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit(f"driftscope-mkfixture failed: {made.stderr}")
        files = [str(Path(tmp) / f"{p}.gguf") for p in WRITTEN_PRESETS]
        args = [str(py), __file__, dump_tool, os.pathsep.join(files), "--compare-written"]
        return subprocess.run(args).returncode


def main():
    if len(sys.argv) == 4 and sys.argv[3] == "--compare":
        sys.exit(compare(sys.argv[1], [Path(p) for p in sys.argv[2].split(os.pathsep)]))
    if len(sys.argv) == 4 and sys.argv[3] == "--compare-written":
        sys.exit(compare(sys.argv[1], [Path(p) for p in sys.argv[2].split(os.pathsep)], WRITTEN_TYPES, True))
    if len(sys.argv) == 5 and sys.argv[2] == "--written":
        sys.exit(written(sys.argv[1], sys.argv[3], Path(sys.argv[4])))
    dump_tool, peers, venv = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if not peers.is_dir():
        skip(f"the llama.cpp peer folder {peers} is absent")
    files = peer_files(peers)
    py = venv_python(venv)
    # The comparison runs under the venv's python, which sees gguf-py and Debian's numpy.
    args = [str(py), __file__, dump_tool, os.pathsep.join(map(str, files)), "--compare"]
    sys.exit(subprocess.run(args).returncode)


if __name__ == "__main__":
    main()
