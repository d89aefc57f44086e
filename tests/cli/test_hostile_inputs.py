"""Every number read from an input file is checked before it is used. Each case edits one field of a
good fixture (a GGUF header, a safetensors header, a config.json, a policy) the way a corrupt or
hostile file would, and `driftscope run` must exit 2 with a message naming the file and the field,
promptly: never a signal, an abort, a hang or a runaway allocation.

The case tables are the regression list of issue 14; add a row for every input a fuzzer finds."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

DS = sys.argv.pop(1)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODELS = os.path.join(ROOT, "fixtures", "models")
TIMEOUT = 30


def ds(*args):
    p = subprocess.run([DS, *args], capture_output=True, timeout=TIMEOUT)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


# --- GGUF: where each field of the header lies, so a case can overwrite exactly one -------------

VALUE_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Gguf:
    """The byte offsets of a GGUF v3 header's fields."""

    def __init__(self, data):
        self.data = bytearray(data)
        self.pos = 24
        self.kv = {}  # key -> (type, offset of the value)
        self.tensors = {}  # name -> {"n_dims": off, "ne": [off...], "type": off, "offset": off}
        n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
        for _ in range(n_kv):
            key = self.string()
            (vtype,) = struct.unpack_from("<I", data, self.pos)
            self.pos += 4
            self.kv[key] = (vtype, self.pos)
            self.skip_value(vtype)
        for _ in range(n_tensors):
            name = self.string()
            t = {"n_dims": self.pos}
            (nd,) = struct.unpack_from("<I", data, self.pos)
            self.pos += 4
            t["ne"] = [self.pos + 8 * d for d in range(nd)]
            self.pos += 8 * nd
            t["type"], t["offset"] = self.pos, self.pos + 4
            self.pos += 12
            self.tensors[name] = t

    def string(self):
        (n,) = struct.unpack_from("<Q", self.data, self.pos)
        s = bytes(self.data[self.pos + 8: self.pos + 8 + n]).decode()
        self.pos += 8 + n
        return s

    def skip_value(self, vtype):
        if vtype == 8:
            self.string()
        elif vtype == 9:
            et, n = struct.unpack_from("<IQ", self.data, self.pos)
            self.pos += 12
            for _ in range(n):
                self.skip_value(et)
        else:
            self.pos += VALUE_SIZES[vtype]

    def put(self, offset, fmt, value):
        struct.pack_into(fmt, self.data, offset, value)
        return self


def gguf_edit(edit, model="qwen2-tiny"):
    def make(tmp):
        g = Gguf(open(os.path.join(MODELS, model + ".gguf"), "rb").read())
        edit(g)
        path = os.path.join(tmp, "edited.gguf")
        with open(path, "wb") as f:
            f.write(g.data)
        return path
    return make


def set_kv_u32(key, value):
    return lambda g: g.put(g.kv[key][1], "<I", value) if g.kv[key][0] == 4 else g.put(g.kv[key][1], "<i", value)


def replace_kv_string(key, raw):
    """Rewrites string value `key` as `raw` bytes of the same length (so no offset moves)."""
    def edit(g):
        off = g.kv[key][1]
        (n,) = struct.unpack_from("<Q", g.data, off)
        assert len(raw) <= n
        g.data[off + 8: off + 8 + n] = raw.ljust(n, b"x")
    return edit


EMBD = "token_embd.weight"
GGUF_CASES = [
    # (name, edit, text the message must contain[, the fixture edited: qwen2-tiny unless named])
    ("tensor_count 2^50", lambda g: g.put(8, "<Q", 2**50), "tensor_count"),
    ("kv_count 2^50", lambda g: g.put(16, "<Q", 2**50), "kv_count"),
    ("dimension 2^40", lambda g: g.put(g.tensors[EMBD]["ne"][0], "<Q", 2**40), "ne[0..1] = 1099511627776, 256 hold more"),
    ("dimension 2^64-1", lambda g: g.put(g.tensors[EMBD]["ne"][1], "<Q", 2**64 - 1), "ne[1] = 18446744073709551615"),
    ("negative dimension", lambda g: g.put(g.tensors[EMBD]["ne"][0], "<q", -5), "(-5)"),
    ("dimensions whose product overflows",
     lambda g: g.put(g.tensors[EMBD]["ne"][0], "<Q", 2**33).put(g.tensors[EMBD]["ne"][1], "<Q", 2**33),
     "ne[0..1] = 8589934592, 8589934592 hold more"),
    ("dimension just above the bound", lambda g: g.put(g.tensors[EMBD]["ne"][0], "<Q", 2**40 + 1),
     "ne[0] = 1099511627777 is out of range"),
    ("n_dims 7", lambda g: g.put(g.tensors[EMBD]["n_dims"], "<I", 7), "n_dims = 7"),
    ("offset 0xFFFFFFFFFFFFFF00", lambda g: g.put(g.tensors[EMBD]["offset"], "<Q", 0xFFFFFFFFFFFFFF00),
     "offset 18446744073709551360"),
    ("offset 2^64-8192", lambda g: g.put(g.tensors[EMBD]["offset"], "<Q", 2**64 - 8192), "offset 18446744073709543424"),
    ("offset just past the data", lambda g: g.put(g.tensors[EMBD]["offset"], "<Q", 1 << 30), "beyond the data section"),
    ("block_count 2^31-1", set_kv_u32("qwen2.block_count", 2**31 - 1), "qwen2.block_count = 2147483647"),
    ("block_count 2^20", set_kv_u32("qwen2.block_count", 2**20), "qwen2.block_count = 1048576"),
    ("embedding_length 0", set_kv_u32("qwen2.embedding_length", 0), "qwen2.embedding_length = 0"),
    ("head_count_kv 2^30", set_kv_u32("qwen2.attention.head_count_kv", 2**30), "qwen2.attention.head_count_kv"),
    ("architecture not UTF-8", replace_kv_string("general.architecture", b"qw\xff\xfe2"), "general.architecture"),
    # llama.cpp rotates the first n_rot dims of its permuted rows, which no reference layout models.
    ("llama partial rotary", set_kv_u32("llama.rope.dimension_count", 8),
     "llama.rope.dimension_count = 8 < head dim", "llama-tiny"),
]


# --- safetensors + config.json ------------------------------------------------------------------

def hf_edit(config=None, header=None):
    """A copy of the qwen2-tiny HF directory with config.json and/or the safetensors header edited."""
    def make(tmp):
        d = os.path.join(tmp, "hf")
        shutil.copytree(os.path.join(MODELS, "qwen2-tiny"), d)
        if config:
            path = os.path.join(d, "config.json")
            j = json.load(open(path))
            config(j)
            json.dump(j, open(path, "w"))
        if header:
            path = os.path.join(d, "model.safetensors")
            data = open(path, "rb").read()
            (n,) = struct.unpack_from("<Q", data, 0)
            h = json.loads(data[8: 8 + n])
            header(h)
            text = json.dumps(h).encode()
            text += b" " * (-len(text) % 8)
            with open(path, "wb") as f:
                f.write(struct.pack("<Q", len(text)) + text + data[8 + n:])
        return d
    return make


def first_tensor(h):
    return next(k for k in h if k != "__metadata__")


def set_entry(field, value):
    def edit(h):
        h[first_tensor(h)][field] = value
    return edit


HF_CASES = [
    ("10^6 layers", hf_edit(config=lambda j: j.update(num_hidden_layers=10**6)), "num_hidden_layers = 1000000"),
    ("hidden_size 2^40", hf_edit(config=lambda j: j.update(hidden_size=2**40)), "hidden_size = 1099511627776"),
    ("num_attention_heads 0", hf_edit(config=lambda j: j.update(num_attention_heads=0)),
     "num_attention_heads = 0"),
    ("vocab_size a string", hf_edit(config=lambda j: j.update(vocab_size="many")), "vocab_size"),
    ("rope_theta a string", hf_edit(config=lambda j: j.update(rope_theta="big")), "rope_theta must be a number"),
    ("rope_scaling type a number", hf_edit(config=lambda j: j.update(rope_scaling={"type": 3})), "rope_scaling.type"),
    ("safetensors negative dimension", hf_edit(header=set_entry("shape", [-1, 64])), "shape"),
    ("safetensors dimension 2^64-1", hf_edit(header=set_entry("shape", [2**64 - 1, 2])), "shape"),
    ("safetensors offsets not integers", hf_edit(header=set_entry("data_offsets", ["a", "b"])), "data_offsets"),
    ("safetensors offset 2^64-8192", hf_edit(header=set_entry("data_offsets", [2**64 - 8192, 2**64 - 8192 + 8])),
     "data_offsets"),
    ("safetensors dtype a list", hf_edit(header=set_entry("dtype", ["F32"])), "dtype"),
]


def drop_head(h):
    del h["lm_head.weight"]


# A directory without lm_head.weight: tied only where config.json says so (HF would give an untied
# model a random head). (case, model directory, expected exit, strings stderr must name)
HEAD_CASES = [
    ("untied, no lm_head.weight", hf_edit(header=drop_head), 2,
     ["config.json: tie_word_embeddings is false", "lm_head.weight"]),
    ("tie_word_embeddings left out (false), no lm_head.weight",
     hf_edit(config=lambda j: j.pop("tie_word_embeddings"), header=drop_head), 2, ["lm_head.weight"]),
    ("tied, no lm_head.weight", hf_edit(config=lambda j: j.update(tie_word_embeddings=True), header=drop_head), 0,
     []),
    ("untied with lm_head.weight", hf_edit(), 0, []),
]


class HostileInputs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ds_hostile_in_")

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, model, message, *extra):
        trace = os.path.join(self.tmp.name, "stub.h5")
        start = time.monotonic()
        rc, out, err = ds("run", "--model", model, "--candidate", "cpu-f16", "--trace", trace, *extra)
        took = time.monotonic() - start
        self.assertEqual(rc, 2, out + err)
        self.assertIn(message, err)
        self.assertLess(len(err), 4000, "the error is one message, not a listing")
        self.assertLess(took, 5.0)
        # The stub trace that records why is readable, whatever bytes the message quoted.
        rc, out, err = ds("report", trace)
        self.assertEqual(rc, 2, out + err)
        return took

    def test_gguf_header_edits(self):
        for name, edit, message, *model in GGUF_CASES:
            with self.subTest(name):
                self.refused(gguf_edit(edit, *model)(self.tmp.name), message)

    def test_safetensors_and_config_edits(self):
        for name, make, message in HF_CASES:
            with self.subTest(name):
                took = self.refused(make(self.tmp.name), message)
                if "layers" in name:
                    self.assertLess(took, 1.0)
                shutil.rmtree(os.path.join(self.tmp.name, "hf"))

    def test_an_untied_head_must_be_in_the_files(self):
        for name, make, want, needles in HEAD_CASES:
            with self.subTest(name):
                model = make(self.tmp.name)
                rc, out, err = ds("run", "--model", model, "--candidate", "cpu-f16", "--prompt-tokens", "2")
                self.assertEqual(rc, want, out + err)
                for n in needles:
                    self.assertIn(n, err)
                shutil.rmtree(os.path.join(self.tmp.name, "hf"))

    def test_config_json_not_utf8_leaves_a_readable_trace(self):
        d = hf_edit()(self.tmp.name)
        path = os.path.join(d, "config.json")
        text = open(path, "rb").read().replace(b'"qwen2"', b'"qwen\xff2"')
        open(path, "wb").write(text)
        self.refused(d, "config.json")

    def test_long_strings_bound_for_a_regex_are_refused_by_length(self):
        # Every user string that reaches a std::regex (which recurses once per character: 30,000 of
        # them overflowed the stack, exit 139 with no word) is bounded first or scanned without one
        # (issue 49, item 12). (entry point, its arguments given the long string, what the error names)
        trace = os.path.join(self.tmp.name, "t.h5")
        rc, out, err = ds("run", "--prompt-tokens", "2", "--trace", trace)
        self.assertEqual(rc, 0, out + err)
        kernel = os.path.join(self.tmp.name, "k.cu")
        with open(kernel, "w") as f:
            f.write("void k() {}\n")

        def policy(text):
            path = os.path.join(self.tmp.name, "long.yaml")
            with open(path, "w") as f:
                f.write(f"rules:\n  - stage: \"{text}\"\n    check: max_abs <= 1\n")
            return ["run", "--policy", path]

        def stage_map(command):
            def args(text):
                path = os.path.join(self.tmp.name, "map.yaml")
                with open(path, "w") as f:
                    f.write(f"kind: rmsnorm\nentry: {text}\n")
                return [command, "--candidate", kernel, "--stage-map", path]
            return args

        cases = [
            ("policy rule stage:", policy, ["stage", "100000 characters", "1000 allowed"]),
            ("run --capture-stages", lambda t: ["run", "--capture-stages", t],
             ["--capture-stages", "100000 characters"]),
            ("export --stages", lambda t: ["export", trace, "--format", "npy", "--out", os.path.join(self.tmp.name, "x"),
                                            "--stages", t],
             ["--stages", "100000 characters"]),
            ("check --stage-map entry:", stage_map("check"), ["field 'entry'", "100000 characters", "256"]),
            ("verify --stage-map entry:", stage_map("verify"), ["field 'entry'", "100000 characters", "256"]),
        ]
        for name, args, needles in cases:
            with self.subTest(name):
                start = time.monotonic()
                rc, out, err = ds(*args("a" * 100000))
                self.assertEqual(rc, 2, out + err[:500])
                for n in needles:
                    self.assertIn(n, err[:2000])
                self.assertLess(len(err), 4000, "the error quotes the field, not the string")
                self.assertLess(time.monotonic() - start, 5.0)

    def test_negative_timeout_is_bad_usage(self):
        rc, out, err = ds("run", "--timeout", "-5")
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--timeout", out + err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
