"""HF's K conv-state rows and batch-of-one tensors through the Qwen3.5 mapping, without torch or the
peer folder: the reference of the qwen35 fixture is exported through the shipped
fixtures/dumps/hf-qwen35.yaml (transformers' `[1, T, W]`), then reshaped the ways transformers and
tools/dump_hf.py write it. `rows: last` keeps the catalog's last K-1 of HF's K conv rows, whatever
the leading axes, and the reference fill computes the GDN `conv` (absent in HF) from them and from a
`[1, T, W]` or bare `[T, W]` in_proj_qkv; a shape the harness cannot use is exit 2 naming the file
and tensor, never an abort. Table-driven: (case, change to the dump, exit, what must be said).

Usage: test_hf_conv_rows.py DRIFTSCOPE
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
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "fixtures", "models", "qwen35-tiny")
MAPPING = os.path.join(ROOT, "fixtures", "dumps", "hf-qwen35.yaml")
STEPS = 3  # decode steps: every later step's conv is filled from the previous conv state
GDN_LAYERS = (0, 2)
CONV = "model.layers.{}.linear_attn.conv_state"
QKV = "model.layers.{}.linear_attn.in_proj_qkv"


def ds(*args):
    return subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=300)


def each_step(d, change):
    """change(step, tensors) on every stepN.safetensors of dump d."""
    for step in range(STEPS + 1):
        path = os.path.join(d, f"step{step}.safetensors")
        tensors = dict(read_safetensors(path))
        change(step, tensors)
        write_safetensors(path, tensors)


def k_rows(lead=()):
    """HF's K rows: an oldest row the catalog does not keep (junk, to show it is never read) above
    the K-1 exported ones; lead: axes before them, as [1, K, conv_dim]."""
    def change(step, t):
        for layer in GDN_LAYERS:
            rows = t[CONV.format(layer)]
            junk = np.full((1, rows.shape[1]), 1e3, np.float32)
            t[CONV.format(layer)] = np.concatenate([junk, rows]).reshape(*lead, rows.shape[0] + 1, rows.shape[1])
    return change


def bare_qkv(step, t):
    for layer in GDN_LAYERS:
        a = t[QKV.format(layer)]
        t[QKV.format(layer)] = a.reshape(a.shape[1], a.shape[2])


def fewer_rows(step, t):
    for layer in GDN_LAYERS:
        t[CONV.format(layer)] = t[CONV.format(layer)][1:]


def newest_row_off(step, t):
    if step == 1:
        rows = t[CONV.format(0)].copy()
        rows[-1] *= np.float32(1 + 1e-3)
        t[CONV.format(0)] = rows


def without_rows_last(text):
    return text.replace("    rows: last\n", "")


# (case, change to the step files, change to the mapping's text, exit, stderr must name,
#  the first failure (stage, layer, step) where exit 1)
CASES = [
    ("K rows, rows: last keeps K-1", k_rows(), None, 0, [], None),
    ("[1, K, conv_dim] rows", k_rows((1,)), None, 0, [], None),
    ("K rows and a bare [T, W] in_proj_qkv", lambda s, t: (k_rows()(s, t), bare_qkv(s, t)), None, 0, [], None),
    ("K rows without rows: last", k_rows(), without_rows_last, 2,
     ["step0.safetensors", CONV.format(0), "[4, 128]", "rows: last"], None),
    ("K-2 rows with rows: last", fewer_rows, None, 2, ["step0.safetensors", CONV.format(0), "at least 3 rows"],
     None),
    ("the newest kept row off by 1e-3", lambda s, t: (k_rows()(s, t), newest_row_off(s, t)), None, 1, [],
     ("conv_state", 0, 1)),
]


class HfConvRows(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        trace = os.path.join(cls.tmp, "t.h5")
        p = ds("run", "--model", MODEL, "--candidate", "cpu-f16", "--tokens", "1,5,9,42", "--decode-steps",
               str(STEPS), "--trace", trace)
        assert p.returncode in (0, 1), p.stdout + p.stderr
        cls.export = os.path.join(cls.tmp, "export")
        p = ds("export", trace, "--format", "safetensors", "--mapping", MAPPING, "--out", cls.export)
        assert p.returncode == 0, p.stdout + p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_conv_rows(self):
        with open(MAPPING) as f:
            shipped = f.read()
        for name, change, remap, want, needles, first in CASES:
            with self.subTest(name), tempfile.TemporaryDirectory() as tmp:
                d = os.path.join(tmp, "dump")
                shutil.copytree(self.export, d)
                self.assertEqual(read_safetensors(os.path.join(d, "step1.safetensors"))[CONV.format(0)].shape,
                                 (3, 128), "export writes the catalog's K-1 rows")
                each_step(d, change)
                with open(os.path.join(d, "mapping.yaml"), "w") as f:
                    f.write(remap(shipped) if remap else shipped)
                out = os.path.join(tmp, "run.json")
                p = ds("run", "--model", MODEL, "--candidate", f"dump:{d}", "--decode-steps", str(STEPS),
                       "--json", out)
                log = p.stdout + p.stderr
                self.assertNotIn("terminate called", log)
                self.assertEqual(p.returncode, want, log)
                for n in needles:
                    self.assertIn(n, p.stderr)
                if want == 2:
                    continue
                with open(out) as f:
                    result = json.load(f)
                status = {(s["stage"], s["layer"], s["step"]): s["status"] for s in result["stages"]}
                self.assertNotIn("missing", status.values())
                for layer in GDN_LAYERS:
                    for step in range(STEPS + 1):
                        self.assertEqual(status[("conv", layer, step)], "filled")
                        self.assertIn(status[("conv_state", layer, step)], ("pass", "fail"))
                if first:
                    f = result["first_failure"]
                    self.assertEqual((f["stage"], f["layer"], f["step"]), first)


if __name__ == "__main__":
    shutil.which(DRIFTSCOPE) or os.path.isfile(DRIFTSCOPE) or sys.exit(f"{DRIFTSCOPE}: not found")
    unittest.main()
