"""llama.cpp's MoE graph names through the shipped mappings (fixtures/dumps/llama.cpp-qwen3moe.yaml and
llama.cpp-qwen3next.yaml). No real llama.cpp MoE dump exists in the project, so one is laid out the
way llama.cpp's graph names and shapes its tensors (build_moe_ffn: ffn_moe_logits, ffn_moe_topk as
I32, ffn_moe_weights_norm, ffn_moe_out; qwen3next's ffn_shexp, shared_expert_gate_sigmoid, ffn_out):
`driftscope export --mapping` writes a reference run in those names, this script checks the files
it wrote against each other in numpy (the ids are integers, the weights of a row sum to one,
ffn_out = ffn_moe_out + gate * ffn_shexp), and `run --candidate dump:DIR` with no mapping.yaml picks
the shipped mapping by family and passes, nothing missing. A bug planted in a copy of the dump
(Qwen3-Next's shared expert added without its gate) fails at ffn_out of that layer, step 0.

Usage: test_llamacpp_moe_dump.py DRIFTSCOPE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOKENS = "1,5,9,42,7"
STEPS = 2

# (preset, family of its shipped mapping, stages the mapping leaves to the reference)
CASES = [("qwen3moe-tiny", "qwen3moe", {"q", "k", "attn_out"}),
         ("qwen3next-tiny", "qwen3next", {"k", "beta", "q_l2", "k_l2"})]


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def export_dump(preset, family, tmp):
    trace, out = os.path.join(tmp, "t.h5"), os.path.join(tmp, "dump")
    rc, text = run("run", "--model", f"synthetic:{preset}", "--candidate", "cpu-f16", "--tokens", TOKENS,
                   "--decode-steps", str(STEPS), "--trace", trace)
    assert rc in (0, 1), text
    rc, text = run("export", trace, "--mapping", os.path.join(ROOT, "fixtures", "dumps", f"llama.cpp-{family}.yaml"),
                   "--out", out)
    assert rc == 0, text
    # As llama.cpp's dumper leaves it: no mapping.yaml, so dump:DIR picks the shipped one by family.
    os.remove(os.path.join(out, "mapping.yaml"))
    return out


def judge(dump_dir, preset, tmp):
    out = os.path.join(tmp, "r.json")
    rc, text = run("run", "--model", f"synthetic:{preset}", "--candidate", f"dump:{dump_dir}", "--decode-steps",
                   str(STEPS), "--json", out)
    with open(out) as f:
        return rc, text, json.load(f)


class LlamaCppMoeNames(unittest.TestCase):
    def test_files_hold_what_llama_cpp_names(self):
        T = len(TOKENS.split(","))
        for preset, family, _ in CASES:
            with self.subTest(preset), tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(export_dump(preset, family, tmp), "step0")
                logits = np.load(os.path.join(d, "ffn_moe_logits-0.npy"))
                ids = np.load(os.path.join(d, "ffn_moe_topk-0.npy"))
                weights = np.load(os.path.join(d, "ffn_moe_weights_norm-0.npy"))
                self.assertEqual(logits.shape[0], T)
                self.assertEqual(ids.shape, weights.shape)
                self.assertEqual(ids.shape[0], T)
                # Integer expert ids in range, distinct per token, highest probability first.
                self.assertTrue(np.array_equal(ids, np.round(ids)))
                self.assertTrue(((ids >= 0) & (ids < logits.shape[1])).all())
                for t in range(T):
                    row = ids[t].astype(np.int64)
                    self.assertEqual(len(set(row.tolist())), len(row))
                    self.assertTrue(np.all(np.diff(logits[t][row]) <= 1e-6), (logits[t][row], row))
                np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
                moe = np.load(os.path.join(d, "ffn_moe_out-0.npy"))
                self.assertEqual(moe.shape[0], T)
                if family == "qwen3next":
                    shexp = np.load(os.path.join(d, "ffn_shexp-0.npy"))
                    gate = np.load(os.path.join(d, "shared_expert_gate_sigmoid-0.npy")).reshape(T, 1)
                    out = np.load(os.path.join(d, "ffn_out-0.npy"))
                    self.assertTrue(((gate > 0) & (gate < 1)).all())
                    np.testing.assert_allclose(out, moe + gate * shexp, rtol=1e-5, atol=1e-5)
                    for name in ("qkv_mixed-0.npy", "z-0.npy", "Qcur_view-1.npy", "attn_post_norm-1.npy"):
                        self.assertTrue(os.path.exists(os.path.join(d, name)), name)

    def test_dump_passes_through_the_shipped_mapping_of_its_family(self):
        for preset, family, unnamed in CASES:
            with self.subTest(preset), tempfile.TemporaryDirectory() as tmp:
                rc, text, report = judge(export_dump(preset, family, tmp), preset, tmp)
                self.assertEqual(rc, 0, text[-3000:])
                self.assertIn(f"chose the shipped fixtures/dumps/llama.cpp-{family}.yaml", text)
                statuses = {}
                for s in report["stages"]:
                    statuses.setdefault(s["stage"], set()).add(s["status"])
                for stage, seen in statuses.items():
                    self.assertEqual(seen, {"filled"} if stage in unnamed else {"pass"}, stage)
                for stage in ("router_logits", "expert_ids", "expert_weights", "moe_out"):
                    self.assertEqual(statuses.get(stage), {"pass"}, stage)
                if family == "qwen3next":
                    for stage in ("shexp_out", "shexp_gate", "ffn_out"):
                        self.assertEqual(statuses.get(stage), {"pass"}, stage)

    def test_shared_expert_added_without_its_gate_fails_at_ffn_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            dump = export_dump("qwen3next-tiny", "qwen3next", tmp)
            for step in range(STEPS + 1):
                d = os.path.join(dump, f"step{step}")
                moe, shexp = np.load(os.path.join(d, "ffn_moe_out-1.npy")), np.load(os.path.join(d, "ffn_shexp-1.npy"))
                np.save(os.path.join(d, "ffn_out-1.npy"), (moe + shexp).astype(np.float32))
            rc, text, report = judge(dump, "qwen3next-tiny", tmp)
            self.assertEqual(rc, 1, text[-3000:])
            first = report["first_failure"]
            self.assertEqual((first["stage"], first["layer"], first["step"]), ("ffn_out", 1, 0), first)


if __name__ == "__main__":
    unittest.main()
