"""Every GGUF a real llama.cpp quantized loads as a model and runs: `driftscope run --model FILE
--candidate cpu-f16 --prompt-tokens 4`, one case per file, ends with a verdict (exit 0 or 1),
never a refusal, a crash or a hang; and the simt candidate, whose kernels read the blocks as the
file stores them, passes on every file.

Usage: test_real_quants.py DRIFTSCOPE PEERS_DIR (the llama.cpp peer folder; absent: skip, exit 77)
"""
import os
import subprocess
import sys
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
PEERS = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/llama.cpp"

# (case name, file under PEERS): every weight matrix of one block type per quants/ file; the
# models/ files mix Q4_K with Q6_K and hold Q8_0.
FILES = [
    ("Q4_0", "quants/llama256.Q4_0.gguf"),
    ("Q4_1", "quants/llama256.Q4_1.gguf"),
    ("Q5_0", "quants/llama256.Q5_0.gguf"),
    ("Q5_1", "quants/llama256.Q5_1.gguf"),
    ("Q2_K", "quants/llama256.Q2_K.gguf"),
    ("Q3_K_M", "quants/llama256.Q3_K_M.gguf"),
    ("Q4_K_S", "quants/llama256.Q4_K_S.gguf"),
    ("Q5_K_M", "quants/llama256.Q5_K_M.gguf"),
    ("Q6_K", "quants/llama256.Q6_K.gguf"),
    ("IQ4_NL", "quants/llama256.IQ4_NL.gguf"),
    ("IQ4_XS", "quants/llama256.IQ4_XS.gguf"),
    ("q4_k_m", "models/llama256.q4_k_m.gguf"),
    ("q8_0", "models/llama256.q8_0.gguf"),
]


class RealQuantFiles(unittest.TestCase):
    def test_every_file_runs_to_a_verdict(self):
        for name, rel in FILES:
            with self.subTest(name):
                path = os.path.join(PEERS, rel)
                self.assertTrue(os.path.isfile(path), f"{path} is missing from the peer folder")
                p = subprocess.run([DRIFTSCOPE, "run", "--model", path, "--candidate", "cpu-f16",
                                    "--prompt-tokens", "4"], capture_output=True, text=True, timeout=120)
                self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
                self.assertRegex(p.stdout, r"\d+ stages judged", p.stdout + p.stderr)
                print(f"{name}: exit {p.returncode}, {p.stdout.strip().splitlines()[-1]}")

    def test_simt_kernels_read_every_real_block_type_and_pass(self):
        # The simt kernels decode the blocks llama-quantize wrote as they read them
        # (kernels/quant_rows.cuh): every type passes against the oracle, which decodes the same
        # file with the loader's dequantizer.
        for name, rel in FILES:
            with self.subTest(name):
                path = os.path.join(PEERS, rel)
                p = subprocess.run([DRIFTSCOPE, "run", "--model", path, "--candidate", "simt", "--mode", "both",
                                    "--prompt-tokens", "4", "--decode-steps", "1"],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("PASS", p.stdout)


if __name__ == "__main__":
    if not os.path.isdir(PEERS):
        print(f"SKIP: the llama.cpp peer folder {PEERS} is absent")
        sys.exit(77)
    unittest.main()
