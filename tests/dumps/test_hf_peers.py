"""Real HF transformers dumps (the HF peer folder: transformers 5.24 on our fixture directories,
f32, f16, bf16 and random-prompt sweeps, the Qwen3.5 hybrid included) judged through the shipped
mapping of their family, `fixtures/dumps/hf-<family>.yaml`, exactly as docs/dumps.md tells a user:

    driftscope run --model fixtures/models/<family>-tiny \
        --candidate dump:DIR:fixtures/dumps/hf-<family>.yaml --decode-steps N --mode chained

Every dump is a correct engine and passes: the shipped mappings declare `numerics: hf-f32`, so the
noise floor is that of an engine summing in f32 as transformers does (docs/policies.md), not of one
rounding per stage, under which most f32 dumps failed. A 1e-5 relative scale planted on one layer's
MLP output of an f32 dump still fails there. Then the shapes the harness cannot use: exit 2 naming
the file and the tensor.

Usage: test_hf_peers.py DRIFTSCOPE PEERS_DIR (the HF peer folder; absent: skip, exit 77)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

from dumplib import read_safetensors, write_safetensors

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
PEERS = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/hf"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# (case, dump under PEERS, expected exit, why it is not 0); the family is the name's first part.
DUMPS = [
    ("gpt2 f32", "dumps/gpt2-f32", 0, ""),
    ("llama f32", "dumps/llama-f32", 0, ""),
    ("qwen2 f32", "dumps/qwen2-f32", 0, ""),
    ("qwen3 f32", "dumps/qwen3-f32", 0, ""),
    ("qwen3next f32", "dumps/qwen3next-f32", 0, ""),
    ("gpt2 bf16", "lowp/gpt2-bf16", 0, ""),
    ("gpt2 f16", "lowp/gpt2-f16", 0, ""),
    ("llama bf16", "lowp/llama-bf16", 0, ""),
    ("llama f16", "lowp/llama-f16", 0, ""),
    ("qwen2 bf16", "lowp/qwen2-bf16", 0, ""),
    ("qwen2 f16", "lowp/qwen2-f16", 0, ""),
    ("qwen3 bf16", "lowp/qwen3-bf16", 0, ""),
    ("qwen3 f16", "lowp/qwen3-f16", 0, ""),
    ("qwen3next bf16", "lowp/qwen3next-bf16", 0, ""),
    ("qwen3next f16", "lowp/qwen3next-f16", 0, ""),
    ("gpt2 sweep 0", "sweep/gpt2-f32-0", 0, ""),
    ("gpt2 sweep 1", "sweep/gpt2-f32-1", 0, ""),
    ("llama sweep 0", "sweep/llama-f32-0", 0, ""),
    ("llama sweep 1", "sweep/llama-f32-1", 0, ""),
    ("qwen2 sweep 0", "sweep/qwen2-f32-0", 0, ""),
    ("qwen2 sweep 1", "sweep/qwen2-f32-1", 0, ""),
    ("qwen3 sweep 0", "sweep/qwen3-f32-0", 0, ""),
    ("qwen3 sweep 1", "sweep/qwen3-f32-1", 0, ""),
    ("qwen3next sweep 0", "sweep/qwen3next-f32-0", 0, ""),
    ("qwen3next sweep 1", "sweep/qwen3next-f32-1", 0, ""),
]

STORAGE = {"f32": "f32", "f16": "f16", "bf16": "bf16"}  # the dump's dtype, from its name


def decode_steps(d):
    return sum(1 for f in os.listdir(d) if f.startswith("step") and f.endswith(".safetensors")) - 1


def run_dump(rel, mapping=None, out_dir=None, family=None):
    d = os.path.join(PEERS, rel)
    family = family or os.path.basename(rel).split("-")[0]
    family = {"qwen3next": "qwen35"}.get(family, family)  # the peer dumps' directories keep its old name
    mapping = mapping or os.path.join(ROOT, "fixtures", "dumps", f"hf-{family}.yaml")
    args = [DRIFTSCOPE, "run", "--model", os.path.join(ROOT, "fixtures", "models", f"{family}-tiny"),
            "--candidate", f"dump:{d}:{mapping}", "--decode-steps", str(decode_steps(d)), "--mode", "chained"]
    if out_dir:
        args += ["--json", os.path.join(out_dir, "run.json")]
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def failure_line(s):
    m = s["metrics"]
    return (f"step {s['step']} layer {s['layer']} {s['stage']}: max_diff {m['max_abs']:.3g}, "
            f"{m['max_abs'] / m['floor_max_abs']:.1f}x floor, {m['max_ulp']:.0f} ulp")


class HfPeerDumps(unittest.TestCase):
    def test_every_dump_judged_through_its_family_mapping(self):
        for name, rel, want, why in DUMPS:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                p = run_dump(rel, out_dir=tmp)
                log = p.stdout + p.stderr
                self.assertIn(p.returncode, (0, 1), log)
                self.assertNotIn("terminate called", log)
                with open(os.path.join(tmp, "run.json")) as f:
                    result = json.load(f)
                stages = result["stages"]
                self.assertEqual([s["stage"] for s in stages if s["status"] == "missing"], [], log)
                dtype = STORAGE[os.path.basename(rel).split("-")[1]]
                judged = [s for s in stages if s["status"] != "filled"]
                self.assertEqual({s["cand_dtype"] for s in judged}, {dtype}, "storage: auto takes the dump's dtype")
                failures = [s for s in stages if s.get("failure")]
                print(f"{name}: exit {p.returncode}, {result['judged']} judged"
                      + "".join(f"\n    {failure_line(s)}" for s in failures))
                self.assertEqual(p.returncode, want, f"{why or 'a correct engine passes'}\n{log}")
                self.assertIn("noise floors model hf-f32 numerics", log)


# (case, f32 dump, layer whose MLP output is scaled, its module)
PLANTED = [
    ("llama", "dumps/llama-f32", 1, "model.layers.1.mlp.down_proj"),
    ("qwen2 random prompt", "sweep/qwen2-f32-1", 0, "model.layers.0.mlp.down_proj"),
    ("gpt2", "dumps/gpt2-f32", 1, "transformer.h.1.mlp.c_proj"),
]


class HfPeerPlantedScale(unittest.TestCase):
    def test_a_1e_5_relative_scale_on_one_mlp_output_fails_at_that_stage(self):
        for name, rel, layer, module in PLANTED:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                bug = os.path.join(tmp, "dump")
                shutil.copytree(os.path.join(PEERS, rel), bug)
                steps = decode_steps(bug) + 1
                for step in range(steps):
                    path = os.path.join(bug, f"step{step}.safetensors")
                    tensors = dict(read_safetensors(path))
                    self.assertIn(module, tensors)
                    tensors[module] = (tensors[module] * np.float32(1 + 1e-5)).astype(np.float32)
                    write_safetensors(path, tensors)
                p = run_dump(os.path.relpath(bug, PEERS), out_dir=tmp, family=name.split()[0])
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                with open(os.path.join(tmp, "run.json")) as f:
                    first = json.load(f)["first_failure"]
                self.assertEqual((first["layer"], first["step"]), (layer, 0), first)
                self.assertIn(first["stage"], ("down", "proj"), first)


HYBRID = "dumps/qwen3next-f32"
CONV_STATE = "model.layers.0.linear_attn.conv_state"

# (case, text of hf-qwen35.yaml replaced, replacement, strings stderr must name)
BAD_SHAPES = [
    ("HF's K conv rows without rows: last", "    rows: last\n", "",
     ["step0.safetensors", CONV_STATE, "[4, 128]", "rows: last"]),
    ("a recurrent state of another size", "linear_attn.recurrent_state", "linear_attn.in_proj_qkv",
     ["step0.safetensors", "model.layers.0.linear_attn.in_proj_qkv", "gdn_state"]),
    ("conv rows of another width", f"tensor: \"model.layers.{{layer}}.linear_attn.conv_state\"",
     "tensor: \"model.layers.{layer}.linear_attn.in_proj_z\"",
     ["step0.safetensors", "model.layers.0.linear_attn.in_proj_z", "conv_state"]),
    ("a per-token stage of another width", "linear_attn.in_proj_qkv\"", "linear_attn.in_proj_z\"",
     ["step0.safetensors", "model.layers.0.linear_attn.in_proj_z", "qkv_mixed"]),
]


class HfPeerBadShapes(unittest.TestCase):
    def test_unusable_shapes_are_exit_2_naming_the_tensor(self):
        with open(os.path.join(ROOT, "fixtures", "dumps", "hf-qwen35.yaml")) as f:
            shipped = f.read()
        for name, old, new, needles in BAD_SHAPES:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                self.assertIn(old, shipped)
                mapping = os.path.join(tmp, "mapping.yaml")
                with open(mapping, "w") as f:
                    f.write(shipped.replace(old, new))
                p = run_dump(HYBRID, mapping=mapping)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                for n in needles:
                    self.assertIn(n, p.stderr)


if __name__ == "__main__":
    if not os.path.isdir(PEERS):
        print(f"SKIP: the HF peer folder {PEERS} is absent (DRIFTSCOPE_HF_PEERS)")
        sys.exit(77)
    shutil.which(DRIFTSCOPE) or os.path.isfile(DRIFTSCOPE) or sys.exit(f"{DRIFTSCOPE}: not found")
    unittest.main()
