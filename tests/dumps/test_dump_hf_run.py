"""tools/dump_hf.py end to end, run as docs/dumps.md tells a user, on every fixture directory:

    python3 tools/dump_hf.py fixtures/models/<family>-tiny --tokens 1,5,9,42 --decode-steps 2 --out DIR
    driftscope run --model fixtures/models/<family>-tiny --candidate dump:DIR --decode-steps 2

The dump carries its family's mapping (mapping.yaml), the judge exits 0 with no stage missing and
no abort, judged in the dtype it ran in, and no argument the installed transformers deprecates is
used. Each dump is compared with the real HF dump of the same fixture, prompt and steps in the
HF peer folder (made by an extended dumper, transformers 5.24): the same tensor names, and values
equal to within the rounding of the dtype. --decode-tokens feeds the engine the reference's greedy
tokens (the case it is for: f16/bf16) or any others (the judge then fails at step 1's embed), a
re-dump beside another mapping.yaml is refused, and a longer earlier dump's extra steps removed.
The hybrid dumps the same under a multimodal checkpoint's config (model_type qwen3_5, text_config). Table-driven: (case, fixture, dtype, peer dump).

Usage: test_dump_hf_run.py DRIFTSCOPE HF_PYTHON HF_PEERS. HF_PYTHON (or the environment's
DRIFTSCOPE_HF_PYTHON) must import torch, transformers and safetensors, else the test is skipped
(exit 77) saying so; a missing peer folder skips only the comparison.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

from dumplib import hf_python_missing, read_safetensors

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
HF_PYTHON = sys.argv.pop(1) if len(sys.argv) > 1 else "python3"
HF_PYTHON = os.environ.get("DRIFTSCOPE_HF_PYTHON") or HF_PYTHON
PEERS = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/hf"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DUMPER = os.path.join(ROOT, "tools", "dump_hf.py")
PROMPT, STEPS = "1,5,9,42", 2

# Relative to a tensor's largest magnitude: a few roundings of the dtype, for another torch build.
TOLERANCE = {"float32": 1e-5, "float16": 8 * 2.0 ** -11, "bfloat16": 8 * 2.0 ** -8}
CAND_DTYPE = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
PEER_ONLY = ("_last3",)  # names the peer dumps hold besides the dumper's (the bf16 hybrid's conv rows)

# (case, fixture directory, --dtype, peer dump under PEERS, feed the reference's greedy tokens)
CASES = [
    ("gpt2 f32", "gpt2-tiny", "float32", "dumps/gpt2-f32", False),
    ("llama f32", "llama-tiny", "float32", "dumps/llama-f32", False),
    ("qwen2 f32", "qwen2-tiny", "float32", "dumps/qwen2-f32", False),
    ("qwen3 f32", "qwen3-tiny", "float32", "dumps/qwen3-f32", False),
    ("qwen35 hybrid f32", "qwen35-tiny", "float32", "dumps/qwen3next-f32", False),
    ("gpt2 bf16, the reference's decode tokens", "gpt2-tiny", "bfloat16", "lowp/gpt2-bf16", True),
    ("qwen35 hybrid f16, the reference's decode tokens", "qwen35-tiny", "float16", "lowp/qwen3next-f16", True),
]


def dump(model, out, *extra):
    return subprocess.run([HF_PYTHON, DUMPER, model, "--tokens", PROMPT, "--decode-steps", str(STEPS), "--out", out,
                           *extra], capture_output=True, text=True, timeout=300)


def judge(model, d, json_out):
    return subprocess.run([DRIFTSCOPE, "run", "--model", model, "--candidate", f"dump:{d}", "--decode-steps",
                           str(STEPS), "--json", json_out], capture_output=True, text=True, timeout=300)


def reference_decode_tokens(model, tmp):
    trace = os.path.join(tmp, "ref.h5")
    p = subprocess.run([DRIFTSCOPE, "run", "--model", model, "--candidate", "cpu-f16", "--tokens", PROMPT,
                        "--decode-steps", str(STEPS), "--trace", trace], capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    with h5py.File(trace, "r") as f:
        tokens = json.loads(f["result"][:].tobytes())["tokens"]
    return tokens[len(PROMPT.split(",")):]


class DumpHfRun(unittest.TestCase):
    def judged(self, model, d, tmp):
        p = judge(model, d, os.path.join(tmp, "run.json"))
        log = p.stdout + p.stderr
        self.assertNotIn("terminate called", log)
        with open(os.path.join(tmp, "run.json")) as f:
            return p, log, json.load(f)

    def test_every_family_dumped_and_judged(self):
        for name, fixture, dtype, peer, feed_reference in CASES:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                model, d = os.path.join(ROOT, "fixtures", "models", fixture), os.path.join(tmp, "dump")
                extra = ["--dtype", dtype]
                if feed_reference:
                    forced = reference_decode_tokens(model, tmp)
                    extra += ["--decode-tokens", ",".join(map(str, forced))]
                p = dump(model, d, *extra)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertNotIn("deprecated", (p.stdout + p.stderr).lower(), "an argument transformers deprecates")
                if feed_reference:
                    self.assertIn(f"decode tokens {forced}", p.stdout)
                names = sorted(os.listdir(d))
                self.assertEqual(names, ["mapping.yaml"] + [f"step{s}.safetensors" for s in range(STEPS + 1)]
                                 + ["tokens.safetensors"])
                p, log, result = self.judged(model, d, tmp)
                self.assertEqual(p.returncode, 0, log)
                stages = result["stages"]
                self.assertEqual([s["stage"] for s in stages if s["status"] == "missing"], [], log)
                self.assertEqual({s["cand_dtype"] for s in stages if s["status"] != "filled"}, {CAND_DTYPE[dtype]})
                if os.path.isdir(os.path.join(PEERS, peer)):
                    self.same_as_peer(d, os.path.join(PEERS, peer), TOLERANCE[dtype])
                else:
                    print(f"{name}: no peer dump {os.path.join(PEERS, peer)}, not compared")

    def same_as_peer(self, d, peer, tol):
        for f in ["tokens.safetensors"] + [f"step{s}.safetensors" for s in range(STEPS + 1)]:
            ours, theirs = read_safetensors(os.path.join(d, f)), read_safetensors(os.path.join(peer, f))
            self.assertEqual(sorted(ours), sorted(n for n in theirs if not n.endswith(PEER_ONLY)), f)
            for n, a in ours.items():
                b = theirs[n]
                # the peer's low-precision hybrid dropped the batch axis: the same elements
                self.assertEqual(a.size, b.size, f"{f}: {n} {a.shape} vs {b.shape}")
                diff = np.abs(a.astype(np.float64).ravel() - b.astype(np.float64).ravel()).max()
                scale = max(np.abs(b.astype(np.float64)).max(), 1e-30)
                self.assertLessEqual(diff, tol * scale, f"{f}: {n} differs from the HF peer dump by {diff:.3g}")

    def test_the_hybrid_under_a_multimodal_config(self):
        # Qwen3.5 checkpoints ship as model_type qwen3_5 with the decoder's settings in text_config:
        # the same weights must give the same dump.
        with tempfile.TemporaryDirectory() as tmp:
            fixture = os.path.join(ROOT, "fixtures", "models", "qwen35-tiny")
            model, d = os.path.join(tmp, "qwen3_5"), os.path.join(tmp, "dump")
            os.mkdir(model)
            with open(os.path.join(fixture, "config.json")) as f:
                text = json.load(f)
            with open(os.path.join(model, "config.json"), "w") as f:
                json.dump({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                           "text_config": text, "tie_word_embeddings": text.get("tie_word_embeddings", False)}, f)
            os.symlink(os.path.join(fixture, "model.safetensors"), os.path.join(model, "model.safetensors"))
            p = dump(model, d)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("of qwen35 (float32)", p.stdout)
            p, log, result = self.judged(fixture, d, tmp)
            self.assertEqual(p.returncode, 0, log)
            self.assertEqual([s["stage"] for s in result["stages"] if s["status"] == "missing"], [], log)
            if os.path.isdir(os.path.join(PEERS, "dumps/qwen3next-f32")):
                self.same_as_peer(d, os.path.join(PEERS, "dumps/qwen3next-f32"), TOLERANCE["float32"])

    def test_other_decode_tokens_are_fed(self):
        with tempfile.TemporaryDirectory() as tmp:
            model, d = os.path.join(ROOT, "fixtures", "models", "llama-tiny"), os.path.join(tmp, "dump")
            forced = [(t + 1) % 256 for t in reference_decode_tokens(model, tmp)]
            p = dump(model, d, "--decode-tokens", ",".join(map(str, forced)))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn(f"step 1: fed token {forced[0]} (--decode-tokens)", p.stdout)
            p, log, result = self.judged(model, d, tmp)
            self.assertEqual(p.returncode, 1, log)
            first = result["first_failure"]
            self.assertEqual((first["stage"], first["step"]), ("embed", 1), first)

    def test_a_redump_beside_another_mapping_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            model, d = os.path.join(ROOT, "fixtures", "models", "qwen2-tiny"), os.path.join(tmp, "dump")
            os.mkdir(d)
            shutil.copy(os.path.join(ROOT, "fixtures", "dumps", "hf-gpt2.yaml"), os.path.join(d, "mapping.yaml"))
            p = dump(model, d)
            self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("mapping.yaml exists and differs", p.stderr)
            self.assertEqual(os.listdir(d), ["mapping.yaml"], "nothing written beside the refused mapping")
            open(os.path.join(d, f"step{STEPS + 3}.safetensors"), "w").close()  # from a longer dump
            p = dump(model, d, "--force")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn(f"removed step{STEPS + 3}.safetensors of an earlier dump", p.stdout)
            self.assertNotIn(f"step{STEPS + 3}.safetensors", os.listdir(d))
            with open(os.path.join(d, "mapping.yaml")) as f:
                self.assertIn("engine: HF transformers (Qwen2ForCausalLM)", f.read())


if __name__ == "__main__":
    why = hf_python_missing(HF_PYTHON)
    if why:
        print(f"SKIP: {why}; configure with -DDRIFTSCOPE_HF_PYTHON=PYTHON or set DRIFTSCOPE_HF_PYTHON")
        sys.exit(77)
    shutil.which(DRIFTSCOPE) or os.path.isfile(DRIFTSCOPE) or sys.exit(f"{DRIFTSCOPE}: not found")
    unittest.main()
