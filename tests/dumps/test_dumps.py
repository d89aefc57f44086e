"""--candidate dump:DIR end to end: dumps written with numpy in llama.cpp's and HF transformers'
naming and layout from the reference's own stages judge as parity, a planted error in layer 1's
ffn_out is named, `export` round-trips bit-exactly, and bad dumps are exit 2 naming the file."""
import atexit
import json
import os
import shutil
import sys
import tempfile
import unittest

import h5py
import numpy as np

import dumplib
from dumplib import DECODE_STEPS, FIXTURES, LLAMA_GGUF, LLAMA_HF, PROMPT, run

dumplib.DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
LLAMA_CPP_MAPPING = os.path.join(FIXTURES, "dumps", "llama.cpp.yaml")
HF_MAPPING = os.path.join(FIXTURES, "dumps", "hf-transformers.yaml")


class Fixture:
    """The reference traces every test derives its dumps from, made once."""
    tmp = None

    @classmethod
    def setup(cls):
        if cls.tmp:
            return
        cls.tmp = tempfile.mkdtemp(prefix="ds-dumps-")
        atexit.register(shutil.rmtree, cls.tmp, True)  # every test program's run left one in /tmp
        cls.gguf_trace = dumplib.reference_trace(LLAMA_GGUF, os.path.join(cls.tmp, "ref-gguf.h5"))
        cls.hf_trace = dumplib.reference_trace(LLAMA_HF, os.path.join(cls.tmp, "ref-hf.h5"))
        cls.gguf = dumplib.read_reference(cls.gguf_trace)
        cls.hf = dumplib.read_reference(cls.hf_trace)


def dump_run(model, directory, *extra):
    trace = os.path.join(directory, "run.h5")
    rc, out, err = run("run", "--model", model, "--candidate", f"dump:{directory}", "--decode-steps",
                       str(DECODE_STEPS), "--trace", trace, *extra)
    return rc, out, err, trace


class DumpParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        Fixture.setup()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=Fixture.tmp)

    def llama_cpp_dump(self, plant=None):
        stages, model, tokens = Fixture.gguf
        d = os.path.join(self.tmp, "llama.cpp")
        dumplib.write_llama_cpp_dump(stages, model, d, PROMPT, plant)
        shutil.copy(LLAMA_CPP_MAPPING, os.path.join(d, "mapping.yaml"))
        return d

    def hf_dump(self, plant=None):
        stages, model, tokens = Fixture.hf
        d = os.path.join(self.tmp, "hf")
        dumplib.write_hf_dump(stages, model, d, PROMPT, plant)
        shutil.copy(HF_MAPPING, os.path.join(d, "mapping.yaml"))
        return d

    def assert_passes_with_fills(self, rc, out, err, trace):
        self.assertEqual(rc, 0, out + err)
        self.assertIn("PASS", out)
        rows = dumplib.summary_rows(trace)
        judged = [r for r in rows if r[3] != 7]
        self.assertTrue(judged)
        self.assertTrue(all(r[3] == 0 for r in judged), [r for r in judged if r[3] != 0])
        return rows

    def test_llama_cpp_dump_of_the_reference_passes(self):
        d = self.llama_cpp_dump()
        rc, out, err, trace = dump_run(LLAMA_GGUF, d)
        rows = self.assert_passes_with_fills(rc, out, err, trace)
        stages = {r[2] for r in rows if r[3] == 0}
        self.assertTrue({"q_rope", "k_rope", "v", "attn", "down", "residual_2", "logits"} <= stages, stages)
        filled = {r[2] for r in rows if r[3] == 7}
        self.assertEqual(filled, {"embed", "q", "k", "attn_out", "ffn_norm", "gate", "up", "ffn_act"})
        self.assertEqual({r[0] for r in rows}, set(range(DECODE_STEPS + 1)))

    def test_llama_cpp_dump_with_an_error_in_layer_1_ffn_out_fails_there(self):
        d = self.llama_cpp_dump(plant=(0, "ffn_out-1"))
        rc, out, err, trace = dump_run(LLAMA_GGUF, d)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("First failing stage: down of layer 1 at step 0", out)
        failing = [r for r in dumplib.summary_rows(trace) if r[3] not in (0, 7)]
        # The planted file alone changed: the dump's l_out is still the unplanted sum, so the local
        # check (recomputed from the dump's own inputs, residual_1 + down) finds residual_2 wrong too.
        self.assertEqual([(r[0], r[1], r[2]) for r in failing], [(0, 1, "down"), (0, 1, "residual_2")])

    def test_llama_cpp_dump_unpermuted_without_the_mapping_step_fails_at_q_rope(self):
        # The permutation is real: a mapping that forgets it names q_rope of layer 0.
        d = self.llama_cpp_dump()
        with open(os.path.join(d, "mapping.yaml")) as f:
            text = f.read().replace(", unpermute: q", "").replace(", unpermute: k", "")
        with open(os.path.join(d, "mapping.yaml"), "w") as f:
            f.write(text)
        rc, out, err, _ = dump_run(LLAMA_GGUF, d)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("First failing stage: q_rope of layer 0 at step 0", out)

    def test_hf_dump_of_the_reference_passes(self):
        d = self.hf_dump()
        rc, out, err, trace = dump_run(LLAMA_HF, d)
        rows = self.assert_passes_with_fills(rc, out, err, trace)
        self.assertEqual({r[2] for r in rows if r[3] == 7}, {"q_rope", "k_rope"})

    def test_hf_dump_with_an_error_in_layer_1_down_proj_fails_there(self):
        d = self.hf_dump(plant=(0, "model.layers.1.mlp.down_proj"))
        rc, out, err, _ = dump_run(LLAMA_HF, d)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("First failing stage: down of layer 1 at step 0", out)

    def test_hf_dump_of_qwen3_with_qk_norm_modules_passes(self):
        model_dir = os.path.join(FIXTURES, "models", "qwen3-tiny")
        stages, model, _ = dumplib.read_reference(
            dumplib.reference_trace(model_dir, os.path.join(self.tmp, "ref-qwen3.h5")))
        d = os.path.join(self.tmp, "qwen3")
        dumplib.write_hf_dump(stages, model, d, PROMPT)
        with open(HF_MAPPING) as f:
            text = f.read().replace("absent: [q_rope, k_rope, q_norm, k_norm]", "absent: [q_rope, k_rope]")
        text = text.replace("stages:\n", "stages:\n"
                            '  q_norm: "step{step}.safetensors:model.layers.{layer}.self_attn.q_norm"\n'
                            '  k_norm: "step{step}.safetensors:model.layers.{layer}.self_attn.k_norm"\n')
        with open(os.path.join(d, "mapping.yaml"), "w") as f:
            f.write(text)
        rc, out, err, trace = dump_run(model_dir, d)
        rows = self.assert_passes_with_fills(rc, out, err, trace)
        self.assertIn((0, 1, "q_norm"), {(r[0], r[1], r[2]) for r in rows if r[3] == 0})

    def test_dump_tokens_win_over_tokens_flag(self):
        d = self.llama_cpp_dump()
        rc, out, err, trace = dump_run(LLAMA_GGUF, d, "--tokens", "3,4")
        self.assertEqual(rc, 0, out + err)
        with h5py.File(trace, "r") as f:
            fed = json.loads(f["result"][:].tobytes())["tokens"]
        self.assertEqual(fed[:len(PROMPT)], list(PROMPT))  # the dump's prompt, not 3,4

    def test_tokens_npy_beside_the_dump_is_the_prompt_without_a_tokens_entry(self):
        d = self.llama_cpp_dump()
        with open(os.path.join(d, "mapping.yaml")) as f:
            text = f.read().replace("tokens: tokens.npy\n", "")
        with open(os.path.join(d, "mapping.yaml"), "w") as f:
            f.write(text)
        rc, out, err, _ = dump_run(LLAMA_GGUF, d)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(f"{len(PROMPT)} prompt tokens", out)
        os.remove(os.path.join(d, "tokens.npy"))  # then the seeded prompt has too few rows: exit 2
        rc, out, err, _ = dump_run(LLAMA_GGUF, d)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("attn_norm-0.npy", err)

    def test_stages_the_mapping_neither_maps_nor_declares_absent_are_missing(self):
        d = self.llama_cpp_dump()
        with open(os.path.join(d, "mapping.yaml")) as f:
            text = f.read().replace("absent: [embed, q, k, attn_out, ffn_norm, gate, up, ffn_act]",
                                    "absent: [embed, q, k, attn_out, ffn_norm, gate, up]")
        with open(os.path.join(d, "mapping.yaml"), "w") as f:
            f.write(text)
        rc, out, err, trace = dump_run(LLAMA_GGUF, d)
        self.assertEqual(rc, 1, out + err)
        missing = {(r[1], r[2]) for r in dumplib.summary_rows(trace) if r[3] == 4}
        self.assertEqual(missing, {(0, "ffn_act"), (1, "ffn_act")})

    def layout_dump(self):
        """The HF dump, but q/k/v fused ([1, T, q | k | v]), attn_norm transposed ([W, T]) and
        residual_2 holding every position so far: a mapping's split, transpose and rows."""
        stages, model, _ = Fixture.hf
        h, hd, nh, nkv = model["hidden"], model["head_dim"], model["n_heads"], model["n_kv_heads"]
        d = self.hf_dump()
        steps = sorted({k[0] for k in stages})
        for s in steps:
            t = {}
            for layer in range(model["n_layers"]):
                g = lambda stage: stages[(s, layer, stage)].reshape(stages[(s, layer, stage)].shape[0], -1)
                t[f"qkv_{layer}"] = np.concatenate([g("q"), g("k"), g("v")], axis=1)[None].astype(np.float32)
                t[f"attn_norm_T_{layer}"] = np.ascontiguousarray(g("attn_norm").T, dtype=np.float32)
                so_far = [stages[(u, layer, "residual_2")].reshape(-1, h) for u in range(s + 1)]
                np.save(os.path.join(d, f"res2-{s}-{layer}.npy"), np.concatenate(so_far)[None].astype(np.float32))
            dumplib.write_safetensors(os.path.join(d, f"fused{s}.safetensors"), t)
        path = os.path.join(d, "mapping.yaml")
        with open(path) as f:
            lines = [l for l in f.read().splitlines()
                     if not l.startswith(("  q:", "  k:", "  v:", "  attn_norm:", "  residual_2:"))]
        lines.insert(lines.index("stages:") + 1, "\n".join([
            '  q: {file: "fused{step}.safetensors", tensor: "qkv_{layer}", split: qkv}',
            '  k: {file: "fused{step}.safetensors", tensor: "qkv_{layer}", split: qkv}',
            '  v: {file: "fused{step}.safetensors", tensor: "qkv_{layer}", split: qkv}',
            '  attn_norm: {file: "fused{step}.safetensors", tensor: "attn_norm_T_{layer}", transpose: [1, 0]}',
            '  residual_2: {file: "res2-{step}-{layer}.npy", rows: positions}']))
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return d

    def test_mapping_split_transpose_and_rows_positions_pass(self):
        d = self.layout_dump()
        rc, out, err, trace = dump_run(LLAMA_HF, d)
        rows = self.assert_passes_with_fills(rc, out, err, trace)
        judged = {(r[0], r[1], r[2]) for r in rows if r[3] == 0}
        for stage in ("q", "k", "v", "attn_norm", "residual_2"):
            self.assertIn((DECODE_STEPS, 1, stage), judged)

    def test_export_under_a_split_transpose_rows_mapping_writes_that_layout(self):
        d = self.layout_dump()
        out_dir = os.path.join(self.tmp, "export-layout")
        rc, out, err = run("export", Fixture.hf_trace, "--mapping", os.path.join(d, "mapping.yaml"),
                           "--out", out_dir)
        self.assertEqual(rc, 0, out + err)
        mine = dumplib.read_safetensors(os.path.join(d, "fused2.safetensors"))
        theirs = dumplib.read_safetensors(os.path.join(out_dir, "fused2.safetensors"))
        for name in ("qkv_1", "attn_norm_T_0"):
            self.assertTrue(np.array_equal(mine[name].reshape(-1), theirs[name].reshape(-1)), name)
            self.assertEqual(mine[name].reshape(-1).shape, theirs[name].reshape(-1).shape)
        np.testing.assert_array_equal(np.load(os.path.join(out_dir, "res2-2-1.npy")),
                                      np.load(os.path.join(d, "res2-2-1.npy")))
        rc, out, err, _ = dump_run(LLAMA_HF, out_dir)
        self.assertEqual(rc, 0, out + err)

    def export_round_trip(self, fmt, model, trace, *extra):
        out_dir = os.path.join(self.tmp, f"export-{fmt}")
        rc, out, err = run("export", trace, "--format", fmt, "--out", out_dir, *extra)
        self.assertEqual(rc, 0, out + err)
        rc, out, err, t = dump_run(model, out_dir)
        self.assertEqual(rc, 0, out + err)
        rows = dumplib.summary_rows(t)
        self.assertTrue(rows)
        self.assertTrue(all(r[3] == 0 and r[4] == 0 for r in rows), [r for r in rows if r[4] != 0 or r[3]])
        return out_dir

    def test_export_npy_round_trips_bit_exactly(self):
        self.export_round_trip("npy", LLAMA_GGUF, Fixture.gguf_trace)

    def test_export_safetensors_round_trips_bit_exactly(self):
        d = self.export_round_trip("safetensors", LLAMA_HF, Fixture.hf_trace)
        self.assertTrue(os.path.exists(os.path.join(d, "step0.safetensors")))

    def test_export_f64_round_trips_bit_exactly(self):
        self.export_round_trip("npy", LLAMA_GGUF, Fixture.gguf_trace, "--dtype", "f64")

    def test_export_under_the_llama_cpp_mapping_writes_llama_cpp_layout(self):
        out_dir = os.path.join(self.tmp, "export-llama")
        rc, out, err = run("export", Fixture.gguf_trace, "--mapping", LLAMA_CPP_MAPPING, "--out", out_dir)
        self.assertEqual(rc, 0, out + err)
        mine = self.llama_cpp_dump()
        for name in ("Qcur-1", "Kcur-0", "kqv_out-1", "l_out-0"):
            a = np.load(os.path.join(out_dir, "step1", name + ".npy"))
            b = np.load(os.path.join(mine, "step1", name + ".npy"))
            self.assertTrue(np.array_equal(a.reshape(-1), b.reshape(-1)), name)
        np.testing.assert_array_equal(np.load(os.path.join(out_dir, "tokens.npy")), PROMPT)
        rc, out, err, _ = dump_run(LLAMA_GGUF, out_dir)
        self.assertEqual(rc, 0, out + err)

    def test_export_stages_filter_keeps_only_matching_stages(self):
        out_dir = os.path.join(self.tmp, "export-some")
        rc, out, err = run("export", Fixture.gguf_trace, "--format", "npy", "--stages", "residual_2|logits",
                           "--out", out_dir)
        self.assertEqual(rc, 0, out + err)
        names = sorted(os.listdir(os.path.join(out_dir, "step0")))
        self.assertEqual(names, ["layer0.residual_2.npy", "layer1.residual_2.npy", "logits.npy"])


if __name__ == "__main__":
    unittest.main()
