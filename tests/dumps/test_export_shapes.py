"""`driftscope export --mapping` writes each engine's own shapes: run the reference on a peer
model, export it through the shipped llama.cpp mapping of its family, and every exported file has
the shape of the file of the same name and step that a real llama.cpp wrote (the llama.cpp peer
folder): `[T, heads, head_dim]` for per-head tensors, `[W]` and `[heads, head_dim]` for one-token
decode steps, the hybrid's value-major GDN state. The export reads back through `dump:` (round
trip, every stage judged and passing). Then the same against the real HF transformers dumps
(`[1, T, W]`), and the mapping's `shape:`/`shapes:` refusals.

Usage: test_export_shapes.py DRIFTSCOPE LLAMACPP_PEERS HF_PEERS (a missing peer folder skips its
cases; both missing: exit 77)
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
LLAMACPP = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/llama.cpp"
HF = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/hf"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKENS = "1,5,9,42,7"

# (case, peer model under models/, the peer dump it must match, shipped mapping)
LLAMACPP_CASES = [
    ("llama", "llama-tiny.tok.gguf", "llama-all", "llama.cpp-llama"),
    ("qwen2", "qwen2-tiny.tok.gguf", "qwen2-all", "llama.cpp-qwen2"),
    ("qwen3", "qwen3-tiny.tok.gguf", "qwen3-all", "llama.cpp-qwen3"),
    ("gpt2", "gpt2-tiny.tok.gguf", "gpt2-all", "llama.cpp-gpt2"),
    ("qwen35", "qwen35-tiny.gguf", "qwen35-all", "llama.cpp-qwen35"),
    ("llama256", "llama256.gguf", "llama256", "llama.cpp-llama"),
    ("llama, the older minimal mapping", "llama-tiny.tok.gguf", "llama-all", "llama.cpp"),
]

# (family, fixture directory, the HF peer dump, tensors whose shape HF writes otherwise and why)
HF_CASES = [
    ("llama", "llama-tiny", "llama-f32", {}),
    ("qwen2", "qwen2-tiny", "qwen2-f32", {}),
    ("qwen3", "qwen3-tiny", "qwen3-f32", {}),
    ("gpt2", "gpt2-tiny", "gpt2-f32", {}),
    # HF's conv state holds K rows, the catalog K-1: export has only the last K-1 (rows: last).
    ("qwen35", "qwen35-tiny", "qwen3next-f32", {"linear_attn.conv_state": "K-1 of HF's K rows"}),
]


def ds(*args):
    return subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=300)


def reference_trace(test, model, tmp, tokens, steps):
    trace = os.path.join(tmp, "t.h5")
    p = ds("run", "--model", model, "--candidate", "cpu-f16", "--trace", trace, "--decode-steps", str(steps),
           "--tokens", tokens)
    test.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
    return trace


def safetensors_shapes(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def round_trip(test, model, out, steps):
    p = ds("run", "--model", model, "--candidate", f"dump:{out}", "--decode-steps", str(steps))
    test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    test.assertNotIn("MISSING", p.stdout)
    test.assertRegex(p.stdout, r"PASS: \d+ stages within policy")


@unittest.skipUnless(os.path.isdir(LLAMACPP), f"no llama.cpp peer folder at {LLAMACPP}")
class LlamaCppShapes(unittest.TestCase):
    def test_every_exported_file_has_the_shape_llama_cpp_wrote(self):
        for case, model_file, dump, mapping in LLAMACPP_CASES:
            with self.subTest(case), tempfile.TemporaryDirectory() as tmp:
                model = os.path.join(LLAMACPP, "models", model_file)
                trace = reference_trace(self, model, tmp, TOKENS, 3)
                out = os.path.join(tmp, "golden")
                p = ds("export", trace, "--mapping", mapping, "--out", out)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                compared = 0
                for step in range(4):
                    step_dir = os.path.join(out, f"step{step}")
                    for name in sorted(os.listdir(step_dir)):
                        real = os.path.join(LLAMACPP, "dumps", dump, f"step{step}", name)
                        self.assertTrue(os.path.isfile(real), f"step{step}/{name}: llama.cpp wrote no such file")
                        ours = np.load(os.path.join(step_dir, name))
                        self.assertEqual(ours.shape, np.load(real).shape, f"step{step}/{name}")
                        self.assertEqual(ours.dtype, np.float32, f"step{step}/{name}")
                        compared += 1
                # Every mapped stage of every layer and step was written (nothing skipped unseen).
                self.assertGreaterEqual(compared, 4 * 10, case)
                self.assertEqual(np.load(os.path.join(out, "tokens.npy")).tolist(), [1, 5, 9, 42, 7])
                round_trip(self, model, out, 3)

    def test_values_match_llama_cpp_in_its_layout(self):
        # Shapes alone would pass a scrambled axis order: the hybrid's value-major state and a
        # per-head query must also hold llama.cpp's numbers (f32 engine vs the reference: close).
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(LLAMACPP, "models", "qwen35-tiny.gguf")
            trace = reference_trace(self, model, tmp, TOKENS, 3)
            out = os.path.join(tmp, "golden")
            p = ds("export", trace, "--mapping", "llama.cpp-qwen35", "--out", out)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            for rel in ["step0/new_state-0.npy", "step2/new_state-2.npy", "step0/Qcur-3.npy",
                        "step1/beta_sigmoid-0.npy", "step3/conv_state_last-2.npy", "step1/q_conv_predelta-0.npy"]:
                ours = np.load(os.path.join(out, rel))
                real = np.load(os.path.join(LLAMACPP, "dumps", "qwen35-all", rel))
                np.testing.assert_allclose(ours, real, rtol=1e-3, atol=1e-4, err_msg=rel)


@unittest.skipUnless(os.path.isdir(HF), f"no HF peer folder at {HF}")
class HfShapes(unittest.TestCase):
    def test_every_exported_tensor_has_the_shape_transformers_wrote(self):
        for family, fixture, dump, differs in HF_CASES:
            with self.subTest(family), tempfile.TemporaryDirectory() as tmp:
                model = os.path.join(ROOT, "fixtures", "models", fixture)
                trace = reference_trace(self, model, tmp, "1,5,9,42", 2)
                out = os.path.join(tmp, "golden")
                p = ds("export", trace, "--mapping", f"hf-{family}", "--out", out)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                compared = 0
                for step in range(3):
                    ours = safetensors_shapes(os.path.join(out, f"step{step}.safetensors"))
                    real = safetensors_shapes(os.path.join(HF, "dumps", dump, f"step{step}.safetensors"))
                    for name, shape in ours.items():
                        self.assertIn(name, real, f"step{step}: transformers wrote no {name}")
                        if any(name.endswith(d) for d in differs):
                            continue
                        self.assertEqual(shape, real[name], f"step{step}: {name}")
                        compared += 1
                self.assertGreater(compared, 3 * 10, family)
                round_trip(self, model, out, 2)


class ShapeKeys(unittest.TestCase):
    """A mapping's `shape:` and `shapes:` are checked when it is read (exit 2 naming file and key),
    and a shape export cannot fill is exit 2 naming the stage."""

    BASE = ('storage: f32\ntokens: tokens.npy\n{top}stages:\n'
            '  q_rope: {{file: "step{{step}}/Qcur-{{layer}}.npy", {extra}}}\n'
            '  gdn_state: {{file: "step{{step}}/new_state-{{layer}}.npy", {state}}}\n')

    REFUSED = [
        ("an unknown symbol", "", "shape: [T, heads, hd]", "transpose: [0, 2, 1], shape: [v_heads, d_v, d_k]",
         "stages.q_rope.shape: 'hd' in 'hd' is neither a positive integer nor one of T, heads"),
        ("no token axis", "", "shape: [heads, head_dim]", "transpose: [0, 2, 1], shape: [v_heads, d_v, d_k]",
         "name the token rows T on exactly one axis"),
        ("T on a state stage", "", "shape: [T, heads, head_dim]", "shape: [T, v_heads, d_v]",
         "gdn_state has no token rows"),
        ("a bad shapes value", "shapes: torch\n", "shape: [T, heads, head_dim]", "shape: [v_heads, d_v, d_k]",
         "shapes: 'torch': expected rows"),
        ("shape not a list", "", "shape: T", "shape: [v_heads, d_v, d_k]", "expected a list of 1 to 8 axes"),
    ]

    def test_malformed_shape_keys_are_refused_naming_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = reference_trace(self, os.path.join(ROOT, "fixtures", "models", "qwen35-tiny.gguf"), tmp,
                                    "1,5,9", 1)
            for case, top, extra, state, needle in self.REFUSED:
                with self.subTest(case):
                    mapping = os.path.join(tmp, "m.yaml")
                    with open(mapping, "w") as f:
                        f.write(self.BASE.format(top=top, extra=extra, state=state))
                    p = ds("export", trace, "--mapping", mapping, "--out", os.path.join(tmp, "o"))
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn(needle, p.stderr)
                    self.assertIn("m.yaml", p.stderr)

    EXPORT_REFUSED = [
        ("a transpose of 3 axes without the file's shape", "shape: [T, heads, head_dim]",
         "transpose: [0, 2, 1]", "stages.gdn_state: transpose [0, 2, 1] has 3 axes, but the written shape"),
        ("a shape of the wrong size", "shape: [T, kv_heads, head_dim]", "transpose: [0, 2, 1], shape: [v_heads, d_v, d_k]",
         "stages.q_rope: shape [T, kv_heads, head_dim]"),
    ]

    def test_a_shape_export_cannot_write_is_exit_2_naming_the_stage(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = reference_trace(self, os.path.join(ROOT, "fixtures", "models", "qwen35-tiny.gguf"), tmp,
                                    "1,5,9", 1)
            for case, extra, state, needle in self.EXPORT_REFUSED:
                with self.subTest(case):
                    mapping = os.path.join(tmp, "m.yaml")
                    with open(mapping, "w") as f:
                        f.write(self.BASE.format(top="shapes: ggml\n", extra=extra, state=state))
                    p = ds("export", trace, "--mapping", mapping, "--out", os.path.join(tmp, "o"))
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn(needle, p.stderr)


if __name__ == "__main__":
    if not os.path.isdir(LLAMACPP) and not os.path.isdir(HF):
        print(f"SKIP: neither peer folder ({LLAMACPP}, {HF}) is present")
        sys.exit(77)
    unittest.main()
