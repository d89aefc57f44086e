"""tools/dump_hf.py without torch: it compiles, `--help` runs (torch and transformers are imported
only to dump) and lists every option docs/dumps.md names, and its argument checks refuse bad input
before anything is imported. Table-driven: (case, arguments, exit, what the output must hold)."""
import os
import py_compile
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "dump_hf.py")
PYTHON = sys.executable

CASES = [
    ("help lists every option", ["--help"], 0,
     ["--tokens", "--decode-steps", "--decode-tokens", "--out", "--dtype", "float16", "bfloat16", "--mapping",
      "--force", "GPT-2", "Qwen3.5"]),
    ("fewer decode tokens than steps", ["m", "--tokens", "1,2", "--decode-steps", "3", "--decode-tokens", "7",
                                        "--out", "o"], 2, ["--decode-tokens gives 1 token(s) for 3 decode step(s)"]),
    ("a dtype torch has not", ["m", "--tokens", "1", "--out", "o", "--dtype", "f32"], 2, ["--dtype"]),
    ("prompt ids not numbers", ["m", "--tokens", "a,b", "--out", "o"], 1, ["--tokens: expected token ids"]),
]


class DumpHfScript(unittest.TestCase):
    def test_compiles_without_torch(self):
        with tempfile.TemporaryDirectory() as tmp:
            py_compile.compile(SCRIPT, cfile=os.path.join(tmp, "dump_hf.pyc"), doraise=True)

    def test_arguments(self):
        for name, args, want, needles in CASES:
            with self.subTest(name):
                p = subprocess.run([PYTHON, SCRIPT, *args], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                for n in needles:
                    self.assertIn(n, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
