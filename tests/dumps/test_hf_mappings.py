"""Each shipped HF mapping, fixtures/dumps/hf-<family>.yaml, read both ways on its family's fixture
directory: `driftscope export --mapping` writes a reference trace in HF's names (the Qwen3.5
hybrid's GDN stages and states included) and `run --candidate dump:` reads it back: exit 0, no
stage missing. Table-driven: (family, decode steps)."""
import os
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

CASES = [("llama", 2), ("qwen2", 2), ("qwen3", 2), ("gpt2", 2), ("qwen35", 3)]


def ds(*args):
    return subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=300)


class HfMappingsRoundTrip(unittest.TestCase):
    def test_export_through_the_mapping_reads_back(self):
        for family, steps in CASES:
            with self.subTest(family), tempfile.TemporaryDirectory() as tmp:
                model = os.path.join(ROOT, "fixtures", "models", f"{family}-tiny")
                trace, out = os.path.join(tmp, "t.h5"), os.path.join(tmp, "dump")
                p = ds("run", "--model", model, "--candidate", "cpu-f16", "--tokens", "1,5,9,42", "--decode-steps",
                       str(steps), "--trace", trace)
                self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
                p = ds("export", trace, "--format", "safetensors", "--mapping",
                       os.path.join(ROOT, "fixtures", "dumps", f"hf-{family}.yaml"), "--out", out)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                p = ds("run", "--model", model, "--candidate", f"dump:{out}", "--decode-steps", str(steps))
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertNotIn("MISSING", p.stdout)
                self.assertRegex(p.stdout, r"PASS: \d+ stages within policy")


if __name__ == "__main__":
    unittest.main()
