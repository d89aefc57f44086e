"""tools/dump_hf.py without torch: it compiles, `--help` runs (torch and transformers are imported
only to dump) and lists every option docs/dumps.md names, its argument checks refuse bad input
before anything is imported, and its torch-free parts, imported as a module and fed numpy arrays
and stand-in caches: the mapping copy that never silently keeps another mapping.yaml, the family
by model_type, the modules hooked per family, Qwen3.5's query/gate split, the GDN states as the
cache holds them in each transformers layout, and the cache keyword of newer transformers.
Table-driven: (case, input, what must come out)."""
import os
import py_compile
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools")
SCRIPT = os.path.join(TOOLS, "dump_hf.py")
PYTHON = sys.executable
sys.path.insert(0, TOOLS)
sys.dont_write_bytecode = True
import dump_hf  # noqa: E402  (torch-free at import)

CASES = [
    ("help lists every option", ["--help"], 0,
     ["--tokens", "--decode-steps", "--decode-tokens", "--out", "--dtype", "float16", "bfloat16", "--mapping",
      "--force", "GPT-2", "Qwen3.5"]),
    ("fewer decode tokens than steps", ["m", "--tokens", "1,2", "--decode-steps", "3", "--decode-tokens", "7",
                                        "--out", "o"], 2, ["--decode-tokens gives 1 token(s) for 3 decode step(s)"]),
    ("a dtype torch has not", ["m", "--tokens", "1", "--out", "o", "--dtype", "f32"], 2, ["--dtype"]),
    ("prompt ids not numbers", ["m", "--tokens", "a,b", "--out", "o"], 1, ["--tokens: expected token ids"]),
    ("negative decode steps", ["m", "--tokens", "1", "--out", "o", "--decode-steps", "-1"], 2,
     ["--decode-steps: -1 is negative"]),
    ("a mapping that is not there", ["m", "--tokens", "1", "--out", "o", "--mapping", "/nonexistent/m.yaml"], 2,
     ["--mapping: /nonexistent/m.yaml is not a file"]),
]


class DumpHfScript(unittest.TestCase):
    def test_compiles_without_torch(self):
        with tempfile.TemporaryDirectory() as tmp:
            py_compile.compile(SCRIPT, cfile=os.path.join(tmp, "dump_hf.pyc"), doraise=True)

    def test_arguments(self):
        for name, args, want, needles in CASES:
            with self.subTest(name):
                p = subprocess.run([PYTHON, "-B", SCRIPT, *args], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                for n in needles:
                    self.assertIn(n, p.stdout + p.stderr)


# (case, mapping.yaml already in the directory (None: none), --force, exit message or None, the text after)
MAPPING_COPIES = [
    ("a new dump directory", None, False, None, "new"),
    ("the same mapping again", "new", False, None, "new"),
    ("another mapping is refused", "old", False, "exists and differs", "old"),
    ("another mapping with --force", "old", True, None, "new"),
]


class MappingCopy(unittest.TestCase):
    def test_an_earlier_dumps_mapping_is_never_silently_kept(self):
        for name, existing, force, refusal, after in MAPPING_COPIES:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                src, out = os.path.join(tmp, "family.yaml"), os.path.join(tmp, "dump")
                os.mkdir(out)
                with open(src, "w") as f:
                    f.write("new")
                if existing is not None:
                    with open(os.path.join(out, "mapping.yaml"), "w") as f:
                        f.write(existing)
                if refusal:
                    with self.assertRaises(SystemExit) as e:
                        dump_hf.copy_mapping(src, out, force)
                    for n in (refusal, "mapping.yaml", src, "--force"):
                        self.assertIn(n, str(e.exception.code))
                else:
                    dump_hf.copy_mapping(src, out, force)
                with open(os.path.join(out, "mapping.yaml")) as f:
                    self.assertEqual(f.read(), after)


# (case, files in the dump directory, decode steps, the stale ones)
STALE = [
    ("an empty directory", [], 2, []),
    ("the same steps again", ["step0.safetensors", "step1.safetensors", "mapping.yaml"], 1, []),
    ("an earlier, longer dump", ["step0.safetensors", "step1.safetensors", "step2.safetensors",
                                 "step10.safetensors", "tokens.safetensors"], 1,
     ["step2.safetensors", "step10.safetensors"]),
    ("names that only look like steps", ["step3.safetensors.bak", "step_3.safetensors", "step3.npy"], 0, []),
]


class StaleSteps(unittest.TestCase):
    def test_an_earlier_longer_dumps_steps_are_found(self):
        for name, files, steps, stale in STALE:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                for f in files:
                    open(os.path.join(tmp, f), "w").close()
                self.assertEqual(dump_hf.stale_steps(tmp, steps), stale)


# (model_type, family or None: refused naming it)
FAMILIES = [("llama", "llama"), ("mistral", "llama"), ("qwen2", "qwen2"), ("qwen3", "qwen3"), ("gpt2", "gpt2"),
            ("qwen3_5_text", "qwen35"), ("qwen3_5", "qwen35"), ("qwen3_next", None), ("phi3", None)]

# (family, module name, hooked, its input saved too)
HOOKED = [
    ("gpt2", "transformer.drop", True, False),
    ("gpt2", "transformer.h.1", True, False),
    ("gpt2", "transformer.h.0.attn.c_attn", True, False),
    ("gpt2", "transformer.h.0.attn.c_proj", True, True),
    ("gpt2", "transformer.h.0.ln_2", True, True),
    ("gpt2", "transformer.h.0.mlp.c_proj", True, True),
    ("gpt2", "transformer.h.0.attn", False, False),
    ("gpt2", "transformer.wte", False, False),
    ("llama", "model.layers.0.self_attn.o_proj", True, True),
    ("llama", "model.layers.0.self_attn.q_norm", False, False),
    ("qwen3", "model.layers.0.self_attn.q_norm", True, False),
    ("qwen35", "model.layers.1.self_attn.q_norm", True, True),
    ("qwen35", "model.layers.0.linear_attn.in_proj_qkv", True, False),
    ("qwen35", "model.layers.0.linear_attn.in_proj_a", True, False),
    ("qwen35", "model.layers.0.linear_attn.norm", True, True),
    ("qwen35", "model.layers.0.linear_attn.out_proj", True, True),
    ("qwen35", "model.layers.0.linear_attn.conv1d", False, False),
    ("qwen35", "model.layers.0.linear_attn", False, False),
]


class FamiliesAndModules(unittest.TestCase):
    def test_family_by_model_type(self):
        for model_type, family in FAMILIES:
            with self.subTest(model_type):
                if family:
                    self.assertEqual(dump_hf.family_of(model_type), family)
                    self.assertTrue(os.path.isfile(os.path.join(dump_hf.MAPPINGS, f"hf-{family}.yaml")))
                else:
                    with self.assertRaises(SystemExit) as e:
                        dump_hf.family_of(model_type)
                    self.assertIn(f"model_type '{model_type}' is not covered", str(e.exception.code))

    def test_modules_hooked(self):
        import re
        for family, name, hooked, with_input in HOOKED:
            with self.subTest(f"{family} {name}"):
                modules, inputs = dump_hf.MODULES[family]
                self.assertEqual(bool(re.fullmatch(modules, name)), hooked)
                self.assertEqual(hooked and name.endswith(inputs), with_input)


# (case, family, names hooked, layers, the layers not found)
LAYERS_FOUND = [
    ("every llama layer", "llama", {"model.layers.0", "model.layers.1", "model.layers.0.mlp.up_proj"}, 2, []),
    ("every gpt2 layer", "gpt2", {"transformer.h.0", "transformer.h.1"}, 2, []),
    ("a multimodal wrapper's names", "qwen35", {"lm_head", "model.language_model.layers.0"}, 2,
     ["model.layers.0", "model.layers.1"]),
    ("gpt2 named as llama", "gpt2", {"model.layers.0"}, 1, ["transformer.h.0"]),
]


class LayersFound(unittest.TestCase):
    def test_a_model_whose_layers_the_hooks_miss_is_named(self):
        for name, family, hooked, n, missing in LAYERS_FOUND:
            with self.subTest(name):
                self.assertEqual(dump_hf.unhooked_layers(hooked, family, n), missing)


class QueryGateSplit(unittest.TestCase):
    def test_per_head_query_then_gate(self):
        # (case, leading shape): HF's [1, T, ...] and a bare [T, ...]
        for name, lead in [("batch of one", (1, 3)), ("token rows", (3,))]:
            with self.subTest(name):
                heads, hd = 2, 4
                # element value = head*100 + half*10 + i: query half 0, gate half 1
                per_head = np.array([[h * 100 + half * 10 + i for half in (0, 1) for i in range(hd)]
                                     for h in range(heads)], np.float32).reshape(-1)
                out = np.broadcast_to(per_head, (*lead, heads * 2 * hd)).copy()
                q, gate = dump_hf.split_query_gate(out, hd)
                want_q = np.array([h * 100 + i for h in range(heads) for i in range(hd)], np.float32)
                self.assertEqual(q.shape, (*lead, heads * hd))
                np.testing.assert_array_equal(q.reshape(-1, heads * hd)[-1], want_q)
                np.testing.assert_array_equal(gate.reshape(-1, heads * hd)[-1], want_q + 10)


class Attrs:
    def __init__(self, **kw):
        self.__dict__.update(kw)


CONV = np.arange(1 * 6 * 4, dtype=np.float32).reshape(1, 6, 4)  # [batch, conv_dim, K]
REC = np.ones((1, 2, 3, 3), np.float32)                          # [batch, heads, d_k, d_v]


def getters(conv, rec):
    return Attrs(get_conv_state=lambda layer: conv if layer == 2 else None,
                 get_recurrent_state=lambda layer: rec if layer == 2 else None)


# (case, cache, exit message or None)
CACHES = [
    ("getters on the cache (transformers 5.2x)", getters(CONV, REC), None),
    ("lists on the cache", Attrs(conv_states=[None, None, CONV], recurrent_states=[None, None, REC]), None),
    ("per-layer tensors", Attrs(layers=[None, None, Attrs(conv_states=CONV, recurrent_states=REC)]), None),
    ("per-layer states by index", Attrs(layers=[None, None, Attrs(conv_states={0: CONV}, recurrent_states={0: REC})]),
     None),
    ("per-layer state lists", Attrs(layers=[None, None, Attrs(conv_states=[CONV], recurrent_states=[REC])]), None),
    ("no state", Attrs(layers=[None, None, Attrs()]), "cannot find the conv/recurrent state of layer 2"),
    ("a getter returning nothing", getters(None, REC), "cannot find the conv/recurrent state of layer 2"),
    ("a batch of two", getters(np.concatenate([CONV, CONV]), REC), "[2, 6, 4]"),
    ("states without the batch", getters(CONV[0], REC[0]), "[6, 4]"),
]


class GdnStates(unittest.TestCase):
    def test_states_from_each_cache_layout(self):
        for name, cache, refusal in CACHES:
            with self.subTest(name):
                if refusal:
                    with self.assertRaises(SystemExit) as e:
                        dump_hf.layer_cache(cache, 2)
                    self.assertIn(refusal, str(e.exception.code))
                    continue
                conv, rec = dump_hf.gdn_states(*dump_hf.layer_cache(cache, 2))
                # K rows of conv_dim, oldest first: row r is the cache's column r
                self.assertEqual(conv.shape, (4, 6))
                np.testing.assert_array_equal(conv[3], CONV[0, :, 3])
                self.assertEqual(rec.shape, (2, 3, 3))


def with_past_key_values(input_ids=None, past_key_values=None, use_cache=None):
    return input_ids


def with_both(input_ids=None, cache=None, past_key_values=None):
    return input_ids


class CacheKeyword(unittest.TestCase):
    def test_keyword_and_returned_cache(self):
        for name, forward, want in [("newer 5.x: cache", lambda input_ids=None, cache=None: 0, "cache"),
                                    ("older: past_key_values", with_past_key_values, "past_key_values"),
                                    ("both: the newer", with_both, "cache"),
                                    ("neither: the older name", len, "past_key_values")]:
            with self.subTest(name):
                self.assertEqual(dump_hf.cache_keyword(forward), want)
        for name, out, want in [("newer output", {"logits": 1, "cache": "C"}, "C"),
                                ("older output", {"logits": 1, "past_key_values": "P"}, "P")]:
            with self.subTest(name):
                self.assertEqual(dump_hf.returned_cache(out), want)
        with self.assertRaises(SystemExit) as e:
            dump_hf.returned_cache({"logits": 1})
        self.assertIn("has no cache (fields: logits)", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
