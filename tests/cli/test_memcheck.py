"""`run --simt-memcheck` through the real CLI: a plugin whose RMSNorm stores past its output at the
one-token decode step (memcheck_plugin/, built from the kernel's CHECKED flavour) exits 1 with the
stage `memory`, the finding naming the kernel's line, and the run reaching its report; the built-in
simt candidate's checked kernels pass under memcheck on every tiny preset (no false alarm).

Usage: test_memcheck.py DRIFTSCOPE PLUGIN.so"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE, PLUGIN = sys.argv[1:3]
del sys.argv[1:3]
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcheck_plugin", "flat_rmsnorm.cu")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=400)
    return p.returncode, p.stdout, p.stderr


def marker_line(path, marker):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError(f"{marker} not in {path}")


class Memcheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_unguarded_store_at_the_decode_step_is_a_memory_finding(self):
        js, junit = os.path.join(self.tmp.name, "r.json"), os.path.join(self.tmp.name, "r.xml")
        rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:flat-rmsnorm",
                           "--fill", "reference", "--layers", "1", "--prompt-tokens", "4", "--decode-steps", "1",
                           "--simt-memcheck", "--json", js, "--junit", junit)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("MEMORY", out)
        self.assertNotIn("signal", out + err)
        with open(js) as f:
            rows = [s for s in json.load(f)["stages"] if s["status"] == "memory"]
        self.assertTrue(rows, out)
        first = rows[0]
        # The prompt (4 tokens x 64) fills the one block exactly; the decode step (1 token) does not.
        self.assertEqual((first["step"], first["layer"], first["stage"]), (1, 0, "attn_norm"), first)
        note = first["note"]
        self.assertIn("memory error in launch 0 of step rmsnorm_attn", note)
        self.assertIn("flat_rmsnorm_kernel: out-of-bounds write of 4 bytes", note)
        self.assertIn("thread (64,0,0) of block (0,0,0)", note)
        self.assertIn("0 bytes past the end of a 256-byte block", note)
        self.assertIn(f"flat_rmsnorm.cu:{marker_line(KERNEL, '@flat:store')}", note)
        with open(junit) as f:
            self.assertIn('type="memory"', f.read())

    def test_the_simt_candidates_checked_kernels_pass_under_memcheck(self):
        # Every tiny preset, both modes: gpt2-tiny's layernorm and attention launch with other dynamic
        # shared memory sizes than the kernels before them (memcheck's red zones move with it).
        for model in ("gpt2-tiny", "llama-tiny", "mixtral-tiny", "qwen2-tiny", "qwen3-tiny", "qwen35-tiny",
                      "qwen3moe-tiny", "llama-deep-tiny"):
            rc, out, err = run("run", "--model", f"synthetic:{model}", "--candidate", "simt", "--mode", "both",
                               "--decode-steps", "2", "--simt-memcheck")
            self.assertEqual(rc, 0, f"{model}\n{out}{err}")
            self.assertNotIn("MEMORY", out)
            self.assertIn("memcheck", out)


if __name__ == "__main__":
    unittest.main()
