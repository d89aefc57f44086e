"""The logits of a real-shape synthetic preset are those of a real model: the reference's next-token
distributions spread (top-1 probability between 0.1 and 0.9 on most rows, never one-hot), and the KL
divergence of a correct f16 candidate against the oracle is small but far from zero. With unit-scale
embeddings and a tied head it read 1e-281 (one logit of 800), which showed nothing."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"


class RealShapeLogits(unittest.TestCase):
    def test_cpu_f16_against_the_oracle_on_qwen2_5_0_5b(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "t.h5")
            p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:qwen2.5-0.5b", "--layers", "2",
                                "--candidate", "cpu-f16", "--mode", "both", "--prompt-tokens", "8",
                                "--trace", trace], capture_output=True, text=True, timeout=600)
            out = p.stdout + p.stderr
            self.assertEqual(p.returncode, 0, out)
            kls = [float(m) for m in re.findall(r"^Logits \((?:isolated|chained)\):.* max KL ([0-9.e+-]+) nats",
                                                out, re.M)]
            self.assertEqual(len(kls), 2, out)
            for kl in kls:
                self.assertGreater(kl, 1e-9, out)
                self.assertLess(kl, 1e-2, out)
            with h5py.File(trace, "r") as f:
                rows = [r for r in f["summary"][:] if r["stage"] == b"logits" and r["mode"] == 0]
                self.assertEqual(len(rows), 1)
                r = rows[0]
                shape = tuple(int(d) for d in r["shape"][:int(r["rank"])])
                ref = f["tensors/ref"][int(r["ref_offset"]):int(r["ref_offset"]) + int(r["numel"])].reshape(shape)
            # Every row after the sink token (row 0): a spread distribution, never one-hot.
            p = np.exp(ref[1:] - ref[1:].max(axis=1, keepdims=True))
            top1 = (p.max(axis=1) / p.sum(axis=1))
            self.assertTrue(np.all(top1 < 0.99), top1)
            self.assertGreater(np.median(top1), 0.05, top1)
            self.assertLess(np.median(top1), 0.95, top1)


if __name__ == "__main__":
    unittest.main()
