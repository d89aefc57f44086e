"""Real llama.cpp dumps (the llama.cpp peer folder: a real llama.cpp's graph tensors, KV cache f32
and flash attention off, on the models beside them) judged as docs/dumps.md tells a user, with no
mapping of one's own: `dump:DIR` chooses the shipped fixtures/dumps/llama.cpp-<family>.yaml.

Every f32 dump passes (exit 0), no stage is `missing`, every stage the mapping names is judged;
a bug planted into a copy of a dump (one layer's MLP output scaled) fails at that stage and
layer; `unpermute` on a model whose Q/K rows are not permuted is refused naming it; and the
qwen35 GGUF llama.cpp reads is read by us too.

Usage: test_llamacpp_peers.py DRIFTSCOPE PEERS_DIR (the llama.cpp peer folder; absent: skip, 77)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
PEERS = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/llama.cpp"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# (dump, model file under models/, family of its shipped mapping, stages llama.cpp does not name)
F32_DUMPS = [
    ("llama-all", "llama-tiny.tok.gguf", "llama", {"q", "k"}),
    ("qwen2-all", "qwen2-tiny.tok.gguf", "qwen2", {"q", "k", "attn_out"}),
    ("qwen3-all", "qwen3-tiny.tok.gguf", "qwen3", {"q", "k", "attn_out"}),
    ("qwen35-all", "qwen35-tiny.gguf", "qwen35", {"k"}),
    ("llama256", "llama256.gguf", "llama", {"q", "k"}),
]


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def judge(dump_dir, model, tmp, *extra):
    out = os.path.join(tmp, "r.json")
    rc, text = run("run", "--model", os.path.join(PEERS, "models", model), "--candidate", f"dump:{dump_dir}",
                   "--decode-steps", "3", "--json", out, *extra)
    with open(out) as f:
        return rc, text, json.load(f)


class F32Dumps(unittest.TestCase):
    def test_every_f32_dump_passes_with_the_shipped_mapping_of_its_family(self):
        for dump, model, family, unnamed in F32_DUMPS:
            with self.subTest(dump=dump), tempfile.TemporaryDirectory() as tmp:
                rc, text, report = judge(os.path.join(PEERS, "dumps", dump), model, tmp)
                self.assertEqual(rc, 0, text[-3000:])
                self.assertIn(f"chose the shipped fixtures/dumps/llama.cpp-{family}.yaml", text)
                statuses = {}
                for s in report["stages"]:
                    statuses.setdefault(s["stage"], set()).add(s["status"])
                self.assertNotIn("missing", {st for v in statuses.values() for st in v})
                # What llama.cpp does not name is filled by the reference; everything else is judged.
                for stage, seen in statuses.items():
                    if stage in unnamed:
                        self.assertEqual(seen, {"filled"}, stage)
                    else:
                        self.assertEqual(seen, {"pass"}, stage)
                # Decode steps were judged too, with the greedy tokens llama.cpp chose.
                self.assertEqual({s["step"] for s in report["stages"]}, {0, 1, 2, 3})


class MissingFiles(unittest.TestCase):
    def test_a_stage_whose_file_is_missing_is_filled_with_fill_reference_else_offered_it(self):
        # Issue 49, item 9: a dump without embd.npy (an engine version that names the embedding
        # otherwise, or does not dump it). (which files go, the stage they hold)
        cases = [("embd.npy", "embed"), ("attn_norm-1.npy", "attn_norm")]
        for name, stage in cases:
            with self.subTest(stage=stage), tempfile.TemporaryDirectory() as tmp:
                dump = os.path.join(tmp, "llama-no-" + stage)
                shutil.copytree(os.path.join(PEERS, "dumps", "llama-all"), dump)
                for step in range(4):
                    os.remove(os.path.join(dump, f"step{step}", name))
                rc, text = run("run", "--model", os.path.join(PEERS, "models", "llama-tiny.tok.gguf"),
                               "--candidate", f"dump:{dump}", "--decode-steps", "3")
                self.assertEqual(rc, 2, text[-3000:])
                self.assertIn(f"step0/{name}", text)
                self.assertIn(f"stage {stage} cannot be judged", text)
                self.assertIn("Run with --fill reference", text)
                rc, text, report = judge(dump, "llama-tiny.tok.gguf", tmp, "--fill", "reference")
                self.assertEqual(rc, 0, text[-3000:])
                self.assertIn(f"step0/{name}", text)
                self.assertIn(f"stage {stage} is filled by the reference", text)
                filled = {(s["step"], s["layer"]) for s in report["stages"]
                          if s["stage"] == stage and s["status"] == "filled"}
                judged = {(s["step"], s["layer"]) for s in report["stages"]
                          if s["stage"] == stage and s["status"] != "filled"}
                self.assertEqual(judged, set())
                self.assertEqual({step for step, _ in filled}, {0, 1, 2, 3})


class PlantedBug(unittest.TestCase):
    def test_a_0_1_percent_scale_on_one_layers_mlp_output_fails_there(self):
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "qwen3-bug")
            shutil.copytree(os.path.join(PEERS, "dumps", "qwen3-all"), dump)
            for step in range(4):
                path = os.path.join(dump, f"step{step}", "ffn_out-1.npy")
                np.save(path, (np.load(path) * np.float32(1.001)).astype(np.float32))
            rc, text, report = judge(dump, "qwen3-tiny.tok.gguf", tmp)
            self.assertEqual(rc, 1, text[-3000:])
            first = report["first_failure"]
            self.assertEqual((first["stage"], first["layer"], first["step"]), ("down", 1, 0), first)


class EngineChoices(unittest.TestCase):
    """The dump's greedy.txt (the token llama.cpp chose after each step) is what the run feeds: at a
    near-tie a quantized engine legitimately picks another token than the reference's greedy one,
    and its next steps consumed that one."""

    def test_the_engines_choice_is_fed_and_noted(self):
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "llama256-other-choice")
            shutil.copytree(os.path.join(PEERS, "dumps", "llama256"), dump)
            with open(os.path.join(dump, "greedy.txt")) as f:
                chosen = [int(t) for t in f.read().split(",")]
            other = (chosen[1] + 1) % 256
            with open(os.path.join(dump, "greedy.txt"), "w") as f:
                f.write(",".join(map(str, chosen[:1] + [other] + chosen[2:])))
            rc, text, report = judge(dump, "llama256.gguf", tmp)
            # The dump's step 2 embedded the token llama.cpp really chose: fed another, embed differs.
            self.assertEqual(rc, 1, text[-3000:])
            first = report["first_failure"]
            self.assertEqual((first["stage"], first["step"]), ("embed", 2), first)
            self.assertIn(f"step 1: the engine chose token {other} where the reference's greedy choice is "
                          f"{chosen[1]}", text)

    def test_a_bad_greedy_file_is_exit_2_naming_it(self):
        for content, named in [("162,x,216", "'x' is not a token id"), ("162,999,216", "token 999 after step 1")]:
            with self.subTest(content), tempfile.TemporaryDirectory() as tmp:
                dump = os.path.join(tmp, "d")
                shutil.copytree(os.path.join(PEERS, "dumps", "llama256"), dump)
                with open(os.path.join(dump, "greedy.txt"), "w") as f:
                    f.write(content)
                rc, out = run("run", "--model", os.path.join(PEERS, "models", "llama256.gguf"), "--candidate",
                              f"dump:{dump}", "--decode-steps", "3")
                self.assertEqual(rc, 2, out[-2000:])
                self.assertIn("greedy.txt", out)
                self.assertIn(named, out)


def mapping_for_present_files(dump_dir, family, dst):
    """The shipped mapping of `family` with every stage whose file this dump lacks moved to `absent`
    (llama.cpp's default graph, flash attention on, names no `embd` and, for some models, no
    `kqv_out`): what a user writes for such a dump, the rest of the mapping unchanged."""
    present = set(os.listdir(os.path.join(dump_dir, "step0")))
    lines, absent = [], []
    with open(os.path.join(ROOT, "fixtures", "dumps", f"llama.cpp-{family}.yaml")) as f:
        for line in f:
            m = re.match(r'\s+([a-z_0-9]+): (?:\{file: )?"step\{step\}/([^"]+)"', line)
            if m and m.group(2).replace("{layer}", "0") not in present:
                absent.append(m.group(1))
                continue
            m = re.match(r"absent: \[(.*)\]", line)
            if m:
                absent += [a.strip() for a in m.group(1).split(",")]
                continue
            lines.append(line)
    with open(dst, "w") as f:
        f.write("".join(lines) + f"absent: [{', '.join(absent)}]\n")
    return dst


# (dump, model, family, what the dump needs declared, a declaration that leaves part of it out)
ENGINE_NUMERICS = [
    # f16 KV cache and flash attention accumulating in f16: differs at `attn` of layer 0.
    ("llama-default", "llama-tiny.tok.gguf", "llama", "llama.cpp-default", "llama.cpp-f32"),
    ("qwen2-kvdefault-fadefault", "qwen2-tiny.tok.gguf", "qwen2", "llama.cpp-default", "llama.cpp-f32"),
    ("qwen3-kvdefault-fadefault", "qwen3-tiny.tok.gguf", "qwen3", "llama.cpp-default", "llama.cpp-f32"),
    # llama.cpp's CPU GELU is an f16 lookup table.
    ("gpt2-all", "gpt2-tiny.tok.gguf", "gpt2", "llama.cpp-f32", "llama.cpp-f32,gelu=exact"),
    # Q8_0 weights: ggml quantizes the activations to Q8_0 blocks; Q4_K/Q6_K weights: to Q8_K.
    ("llama256.q8_0", "llama256.q8_0.gguf", "llama", "llama.cpp-f32", "llama.cpp-f32,act-quant=none"),
    ("llama256.q4_k_m", "llama256.q4_k_m.gguf", "llama", "llama.cpp-f32", "llama.cpp-f32,act-quant=none"),
    ("llama256.q4_k_m", "llama256.q4_k_m.gguf", "llama", "accum=f32,act-quant=q8_k", "f32"),
]


# What the JSON report records for a declared profile: its key=value spelling.
NUMERICS = {
    "llama.cpp-default":
        "accum=f32,rope=f32-recurrence,attention=f16-flash,gelu=f16-table,act-quant=ggml,kv-cache=f16",
    "llama.cpp-f32": "accum=f32,rope=f32-recurrence,gelu=f16-table,act-quant=ggml",
}


class EngineNumerics(unittest.TestCase):
    """llama.cpp's own numerics, declared (--numerics), make its correct dumps pass; leaving out the
    part a dump needs fails it at the stage that part affects. The f32 dumps pass with the f32
    profile the shipped mappings declare (F32Dumps)."""

    def test_each_dump_passes_with_its_numerics_and_fails_without(self):
        for dump, model, family, good, short in ENGINE_NUMERICS:
            with self.subTest(dump=dump, numerics=good), tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(PEERS, "dumps", dump)
                mapping = mapping_for_present_files(d, family, os.path.join(tmp, "m.yaml"))
                rc, text, report = judge(f"{d}:{mapping}", model, tmp, "--numerics", good)
                self.assertEqual(rc, 0, text[-3000:])
                self.assertIn(f"noise floors model {good} numerics", text)
                self.assertEqual(report["numerics"], NUMERICS.get(good, good))  # the resolved spelling
                rc, text, report = judge(f"{d}:{mapping}", model, tmp, "--numerics", short)
                self.assertEqual(rc, 1, text[-3000:])
                first = report["first_failure"]
                self.assertEqual((first["step"], first["layer"]), (0, 0), first)

    def test_a_malformed_numerics_is_bad_input_naming_it(self):
        for spec, named in [("llama.cpp-f33", "unknown profile 'llama.cpp-f33'"), ("accum=f16", "accum=f16"),
                            ("kv-cache=i32", "kv-cache=i32"), ("f32,bogus=1", "unknown key 'bogus'")]:
            with self.subTest(spec):
                rc, out = run("run", "--model", os.path.join(PEERS, "models", "llama-tiny.tok.gguf"),
                              "--candidate", f"dump:{os.path.join(PEERS, 'dumps', 'llama-all')}", "--numerics", spec)
                self.assertEqual(rc, 2, out[-2000:])
                self.assertIn(named, out)


class Refusals(unittest.TestCase):
    def test_unpermute_on_a_model_whose_rows_are_not_permuted_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            mapping = os.path.join(tmp, "m.yaml")
            with open(os.path.join(ROOT, "fixtures", "dumps", "llama.cpp-llama.yaml")) as f:
                text = f.read()
            with open(mapping, "w") as f:
                f.write(text)
            rc, out = run("run", "--model", os.path.join(PEERS, "models", "qwen2-tiny.tok.gguf"), "--candidate",
                          f"dump:{os.path.join(PEERS, 'dumps', 'qwen2-all')}:{mapping}", "--decode-steps", "3")
            self.assertEqual(rc, 2, out[-2000:])
            self.assertIn("unpermute", out)
            self.assertIn("not permuted", out)

    def test_a_directory_without_mapping_or_known_layout_names_what_to_do(self):
        with tempfile.TemporaryDirectory() as tmp:
            rc, out = run("run", "--model", os.path.join(PEERS, "models", "llama-tiny.tok.gguf"), "--candidate",
                          f"dump:{tmp}")
            self.assertEqual(rc, 2, out)
            self.assertIn("no mapping.yaml", out)


class Qwen35File(unittest.TestCase):
    def test_the_qwen35_gguf_llama_cpp_reads_is_ours_too(self):
        # llama.cpp's dense Qwen3.5 hybrid: read as a qwen35-family model with the tiled V-head map.
        # The fused kernels implement only the grouped map: the gate says so rather than run them.
        rc, out = run("gate", "--model", os.path.join(PEERS, "models", "qwen35-tiny.gguf"))
        self.assertEqual(rc, 0, out[-2000:])
        self.assertRegex(out, r"simt +REFUSED +missing ops \[GdnTiledHeads\]")
        rc, out = run("run", "--model", os.path.join(PEERS, "models", "qwen35-tiny.gguf"), "--candidate", "cpu-f16",
                      "--mode", "both", "--decode-steps", "2")
        self.assertEqual(rc, 0, out[-2000:])


if __name__ == "__main__":
    if not os.path.isdir(os.path.join(PEERS, "dumps")):
        print(f"SKIP: no llama.cpp peer folder at {PEERS}")
        sys.exit(77)
    unittest.main()
