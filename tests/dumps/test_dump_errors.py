"""Bad dumps, mappings and prompts: exit 2 with a message naming the file (and the tensor), never a
signal, a hang or a read past the end of a file. Table-driven: each case mutates a valid dump."""
import os
import shutil
import struct
import sys
import tempfile
import unittest
import zipfile

import numpy as np

import dumplib
from dumplib import DECODE_STEPS, FIXTURES, LLAMA_GGUF, LLAMA_HF, PROMPT, run

dumplib.DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
LLAMA_CPP_MAPPING = os.path.join(FIXTURES, "dumps", "llama.cpp.yaml")
HF_MAPPING = os.path.join(FIXTURES, "dumps", "hf-transformers.yaml")


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def replace_in(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, (old, path)
    write(path, text.replace(old, new), "w")


def npy_header_bytes(descr="<f4", shape="(5, 64)", fortran="False"):
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}".encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


def st_file(header_json, data=b""):
    text = header_json.encode()
    return struct.pack("<Q", len(text)) + text + data


ATTN0 = "step0/attn_norm-0.npy"


def reshape_st(path, name, change):
    tensors = dumplib.read_safetensors(path)
    tensors[name] = np.ascontiguousarray(change(tensors[name]))
    dumplib.write_safetensors(path, tensors)

# (name, which dump, mutation of the dump directory d, extra run args, strings stderr must name)
CASES = [
    ("mapping is not YAML", "llama", lambda d: write(f"{d}/mapping.yaml", "stages: [unclosed\n", "w"), [],
     ["mapping.yaml", "not valid YAML"]),
    ("mapping names an unknown stage", "llama",
     lambda d: replace_in(f"{d}/mapping.yaml", "  attn_norm:", "  attn_nrom:"), [], ["mapping.yaml", "attn_nrom"]),
    ("mapping has an unknown key", "llama",
     lambda d: replace_in(f"{d}/mapping.yaml", "unpermute: q,", "unpermute: q, flip: yes,"), [],
     ["mapping.yaml", "stages.q_rope.flip"]),
    ("mapping has a bad placeholder", "llama",
     lambda d: replace_in(f"{d}/mapping.yaml", "attn_norm-{layer}", "attn_norm-{lyr}"), [],
     ["mapping.yaml", "{lyr}"]),
    ("mapping has a bad unpermute", "llama",
     lambda d: replace_in(f"{d}/mapping.yaml", "unpermute: q,", "unpermute: v,"), [], ["mapping.yaml", "unpermute"]),
    ("mapping declares a mapped stage absent", "llama",
     lambda d: replace_in(f"{d}/mapping.yaml", "absent: [embed,", "absent: [v, embed,"), [],
     ["mapping.yaml", "absent: v", "also mapped under stages"]),
    ("tokens.npy holds a single id, not a prompt", "llama", lambda d: np.save(f"{d}/tokens.npy", np.int64(3)), [],
     ["tokens.npy", "shape [] is not one prompt of token ids"]),
    ("mapping is missing", "llama", lambda d: os.remove(f"{d}/mapping.yaml"), [], ["mapping.yaml"]),
    ("a dump file is missing", "llama", lambda d: os.remove(f"{d}/step1/Kcur-1.npy"), [],
     ["step1/Kcur-1.npy", "k_rope", "layer 1"]),
    ("a decode step is missing", "llama", lambda d: shutil.rmtree(f"{d}/step2"), [], ["step2/attn_norm-0.npy"]),
    ("a dump tensor has the wrong shape", "llama",
     lambda d: np.save(f"{d}/step0/Vcur-1.npy", np.zeros((5, 33), np.float32)), [],
     ["step0/Vcur-1.npy", "(stage v, layer 1, step 0)", "[5, 33]"]),
    ("a dump tensor has too few rows", "llama",
     lambda d: np.save(f"{d}/step0/l_out-0.npy", np.zeros((4, 64), np.float32)), [],
     ["step0/l_out-0.npy", "residual_2"]),
    ("a dump tensor holds integers", "llama",
     lambda d: np.save(f"{d}/{ATTN0}", np.zeros((5, 64), np.int32)), [], [ATTN0, "integers"]),
    ("npy magic is wrong", "llama", lambda d: write(f"{d}/{ATTN0}", b"NOTNUMPY" + bytes(100)), [], [ATTN0, "magic"]),
    ("npy header length past the file", "llama",
     lambda d: write(f"{d}/{ATTN0}", b"\x93NUMPY\x01\x00\xff\xff{'descr'"), [], [ATTN0, "header"]),
    ("npy header is not a dict", "llama",
     lambda d: write(f"{d}/{ATTN0}", b"\x93NUMPY\x01\x00\x08\x00garbage!"), [], [ATTN0, "not a valid .npy header"]),
    ("npy shape is absurd", "llama",
     lambda d: write(f"{d}/{ATTN0}", npy_header_bytes(shape="(99999999999, 99999999999, 99999999)")), [],
     [ATTN0]),
    ("npy data is truncated", "llama",
     lambda d: write(f"{d}/{ATTN0}", npy_header_bytes() + bytes(100)), [], [ATTN0, "data bytes"]),
    ("npy is big-endian", "llama",
     lambda d: write(f"{d}/{ATTN0}", npy_header_bytes(descr=">f4") + bytes(5 * 64 * 4)), [], [ATTN0, ">f4"]),
    ("npy has an object dtype", "llama",
     lambda d: write(f"{d}/{ATTN0}", npy_header_bytes(descr="|O") + bytes(8)), [], [ATTN0, "|O"]),
    ("npy version is unknown", "llama",
     lambda d: write(f"{d}/{ATTN0}", b"\x93NUMPY\x09\x00" + bytes(60)), [], [ATTN0, "version 9"]),
    ("tokens.npy is out of the vocabulary", "llama",
     lambda d: np.save(f"{d}/tokens.npy", np.asarray([1, 2, 999], np.int64)), [], ["tokens", "999"]),
    ("tokens.npy holds floats", "llama", lambda d: np.save(f"{d}/tokens.npy", np.zeros(3, np.float32)), [],
     ["tokens.npy"]),
    ("isolated mode is refused", "llama", lambda d: None, ["--mode", "isolated"], ["--mode isolated", "chained"]),
    ("both modes are refused", "llama", lambda d: None, ["--mode", "both"], ["--mode both", "chained"]),
    ("safetensors tensor is missing", "hf",
     lambda d: dumplib.write_safetensors(f"{d}/step1.safetensors", {"x": np.zeros(1, np.float32)}), [],
     ["step1.safetensors", "model.embed_tokens"]),
    ("safetensors header length is huge", "hf",
     lambda d: write(f"{d}/step0.safetensors", struct.pack("<Q", 1 << 62) + b"{}"), [],
     ["step0.safetensors", "header length"]),
    ("safetensors header is not JSON", "hf", lambda d: write(f"{d}/step0.safetensors", st_file("{not json")), [],
     ["step0.safetensors", "not JSON"]),
    ("safetensors offsets lie past the data", "hf",
     lambda d: write(f"{d}/step0.safetensors",
                     st_file('{"model.embed_tokens": {"dtype": "F32", "shape": [1, 5, 64], '
                             '"data_offsets": [0, 1280]}}', bytes(16))), [],
     ["step0.safetensors", "model.embed_tokens", "data_offsets"]),
    ("safetensors shape disagrees with its bytes", "hf",
     lambda d: write(f"{d}/step0.safetensors",
                     st_file('{"model.embed_tokens": {"dtype": "F32", "shape": [1, 5, 64], '
                             '"data_offsets": [0, 16]}}', bytes(16))), [],
     ["step0.safetensors", "model.embed_tokens"]),
    ("safetensors dtype is unknown", "hf",
     lambda d: write(f"{d}/step0.safetensors",
                     st_file('{"model.embed_tokens": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}',
                             bytes(8))), [], ["step0.safetensors", "C64"]),
    ("safetensors tensor has the wrong shape", "hf",
     lambda d: reshape_st(f"{d}/step1.safetensors", "model.layers.1.self_attn.k_proj", lambda a: a[..., :31]), [],
     ["step1.safetensors", "model.layers.1.self_attn.k_proj", "(stage k, layer 1, step 1)"]),
]


def npz_cases():
    """An .npz dump: the same llama.cpp tensors as members of one archive per step."""
    def to_npz(d, compress=False, corrupt=None):
        replace_in(f"{d}/mapping.yaml", '"step{step}/attn_norm-{layer}.npy"',
                   '"step{step}.npz:attn_norm-{layer}"')
        for s in range(DECODE_STEPS + 1):
            members = {f"attn_norm-{l}": np.load(f"{d}/step{s}/attn_norm-{l}.npy") for l in range(2)}
            (np.savez_compressed if compress else np.savez)(f"{d}/step{s}.npz", **members)
        if corrupt:
            corrupt(f"{d}/step0.npz")

    def truncate(p):
        data = open(p, "rb").read()
        write(p, data[:len(data) // 2])

    def bad_method(p):
        data = bytearray(open(p, "rb").read())
        at = data.rfind(b"PK\x01\x02")
        data[at + 10:at + 12] = struct.pack("<H", 12)  # bzip2
        write(p, bytes(data))

    def huge_cd(p):
        data = bytearray(open(p, "rb").read())
        at = data.rfind(b"PK\x05\x06")
        data[at + 12:at + 16] = struct.pack("<I", 0x7fffffff)
        write(p, bytes(data))

    return [
        ("npz is truncated", "llama", lambda d: to_npz(d, corrupt=truncate), [], ["step0.npz"]),
        ("npz central directory past the file", "llama", lambda d: to_npz(d, corrupt=huge_cd), [], ["step0.npz"]),
        ("npz member uses an unknown compression", "llama", lambda d: to_npz(d, corrupt=bad_method), [],
         ["step0.npz", "method 12"]),
        ("npz is not a zip", "llama", lambda d: to_npz(d, corrupt=lambda p: write(p, b"PK not really" * 3)), [],
         ["step0.npz"]),
        ("npz lacks a member", "llama",
         lambda d: to_npz(d, corrupt=lambda p: np.savez(p, other=np.zeros(1))), [], ["step0.npz", "attn_norm-0"]),
    ]


class BadDumps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds-dump-errors-")
        stages, model, _ = dumplib.read_reference(
            dumplib.reference_trace(LLAMA_GGUF, os.path.join(cls.tmp, "ref.h5")))
        cls.llama = os.path.join(cls.tmp, "llama")
        dumplib.write_llama_cpp_dump(stages, model, cls.llama, PROMPT)
        shutil.copy(LLAMA_CPP_MAPPING, os.path.join(cls.llama, "mapping.yaml"))
        stages, model, _ = dumplib.read_reference(
            dumplib.reference_trace(LLAMA_HF, os.path.join(cls.tmp, "ref-hf.h5")))
        cls.hf = os.path.join(cls.tmp, "hf")
        dumplib.write_hf_dump(stages, model, cls.hf, PROMPT)
        shutil.copy(HF_MAPPING, os.path.join(cls.hf, "mapping.yaml"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check(self, name, which, mutate, extra, must_name):
        d = os.path.join(self.tmp, name.replace(" ", "-"))
        shutil.copytree(self.llama if which == "llama" else self.hf, d)
        mutate(d)
        model = LLAMA_GGUF if which == "llama" else LLAMA_HF
        rc, out, err = run("run", "--model", model, "--candidate", f"dump:{d}", "--decode-steps",
                           str(DECODE_STEPS), *extra)
        self.assertEqual(rc, 2, f"{name}: rc {rc}\n{out}{err}")
        for s in must_name:
            self.assertIn(s, err, f"{name}: stderr does not name {s!r}:\n{err}")

    def test_valid_dumps_pass(self):
        for which, model in (("llama", LLAMA_GGUF), ("hf", LLAMA_HF)):
            d = self.llama if which == "llama" else self.hf
            rc, out, err = run("run", "--model", model, "--candidate", f"dump:{d}", "--decode-steps",
                               str(DECODE_STEPS))
            self.assertEqual(rc, 0, which + out + err)

    def test_npz_stored_and_deflated_members_are_read(self):
        for compress in (False, True):
            name = f"npz-ok-{compress}"
            d = os.path.join(self.tmp, name)
            shutil.copytree(self.llama, d)
            replace_in(f"{d}/mapping.yaml", '"step{step}/attn_norm-{layer}.npy"', '"step{step}.npz:attn_norm-{layer}"')
            for s in range(DECODE_STEPS + 1):
                members = {f"attn_norm-{l}": np.load(f"{d}/step{s}/attn_norm-{l}.npy") for l in range(2)}
                (np.savez_compressed if compress else np.savez)(f"{d}/step{s}.npz", **members)
                for l in range(2):
                    os.remove(f"{d}/step{s}/attn_norm-{l}.npy")
            rc, out, err = run("run", "--model", LLAMA_GGUF, "--candidate", f"dump:{d}", "--decode-steps",
                               str(DECODE_STEPS))
            self.assertEqual(rc, 0, name + out + err)

    def test_bad_dumps_exit_2_naming_the_file(self):
        for case in CASES + npz_cases():
            with self.subTest(case[0]):
                self.check(*case)

    def test_tokens_flag_errors(self):
        for name, arg, must in (("out of vocab", "1,2,256", "token id 256 at position 2"),
                                ("negative", "1,-3", "token id -3"),
                                ("not a number", "1,x,3", "'x'"),
                                ("empty", ",", "no token ids"),
                                ("missing file", "@/nonexistent/tokens.txt", "/nonexistent/tokens.txt")):
            with self.subTest(name):
                rc, out, err = run("run", "--model", LLAMA_GGUF, "--candidate", "cpu-f16", "--tokens", arg)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(must, err)

    def test_tokens_file_sets_the_prompt(self):
        path = os.path.join(self.tmp, "tokens.txt")
        write(path, "1 5\n9, 42\n", "w")
        rc, out, err = run("run", "--model", LLAMA_GGUF, "--candidate", "cpu-f16", "--tokens", f"@{path}",
                           "--json", os.path.join(self.tmp, "r.json"))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("4 prompt tokens", out)

    def test_export_errors(self):
        trace = os.path.join(self.tmp, "ref.h5")
        for name, args, must in (
                ("no format", [trace, "--out", self.tmp + "/x"], "--format"),
                ("not a trace", [LLAMA_GGUF, "--format", "npy", "--out", self.tmp + "/x"], "llama-tiny.gguf"),
                ("bad regex", [trace, "--format", "npy", "--stages", "(", "--out", self.tmp + "/x"], "--stages"),
                ("no stage matches", [trace, "--format", "npy", "--stages", "nothing", "--out", self.tmp + "/x"],
                 "no reference tensor"),
                ("mapping format disagrees", [trace, "--format", "safetensors", "--mapping", LLAMA_CPP_MAPPING,
                                              "--out", self.tmp + "/x"], "llama.cpp.yaml")):
            with self.subTest(name):
                rc, out, err = run("export", *args)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(must, err)


if __name__ == "__main__":
    unittest.main()
