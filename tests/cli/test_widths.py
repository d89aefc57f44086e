"""run --widths odd: every family's synthetic presets run at widths off every vector and tile
multiple (its -tails-tiny preset), where a tail bug shows that the model's own widths hide; a model
file, or a family with no tails preset, is exit 2 saying so."""
import os
import subprocess
import sys
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "models")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, "run", *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


class Widths(unittest.TestCase):
    def test_each_family_runs_as_its_tails_preset(self):
        cases = [  # (model, the preset it runs as)
            ("synthetic:llama-tiny", "synthetic:llama-tails-tiny"),
            ("synthetic:llama3-tiny", "synthetic:llama-tails-tiny"),
            ("synthetic:qwen2-tiny", "synthetic:qwen2-tails-tiny"),
            ("synthetic:qwen2.5-0.5b", "synthetic:qwen2-tails-tiny"),
            ("synthetic:qwen3-tiny", "synthetic:qwen3-tails-tiny"),
            ("synthetic:gpt2-small", "synthetic:gpt2-tails-tiny"),
        ]
        for model, tails in cases:
            with self.subTest(model=model):
                rc, out, err = run("--model", model, "--widths", "odd", "--candidate", "cpu-f16",
                                   "--prompt-tokens", "5", "--decode-steps", "1", "--json", os.devnull)
                self.assertEqual(rc, 0, out + err)
                self.assertIn(f"--widths odd: {model} runs as {tails}", out)

    def test_a_tails_preset_runs_as_itself(self):
        rc, out, err = run("--model", "synthetic:qwen3-tails-tiny", "--widths", "odd", "--candidate", "cpu-f16",
                           "--prompt-tokens", "5")
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("runs as", out)

    def test_a_tail_bug_passes_at_the_models_widths_and_fails_at_odd_ones(self):
        cases = [("as-is", 0), ("odd", 1)]  # (--widths, exit code)
        for widths, code in cases:
            with self.subTest(widths=widths):
                rc, out, err = run("--model", "synthetic:qwen2-tiny", "--widths", widths,
                                   "--candidate", "mutant:gemv-no-tail")
                self.assertEqual(rc, code, out + err)
                if code:
                    self.assertIn("First failing stage: attn_out of layer 0", out)

    def test_refusals_name_what_to_run_instead(self):
        cases = [  # (model, words the error must hold)
            (os.path.join(FIXTURES, "qwen3-tiny.gguf"), ["synthetic presets only", "synthetic:qwen3-tails-tiny"]),
            ("synthetic:qwen35-tiny", ["--widths odd", "no -tails-tiny preset"]),
        ]
        for model, words in cases:
            with self.subTest(model=model):
                rc, out, err = run("--model", model, "--widths", "odd", "--candidate", "cpu-f16")
                self.assertEqual(rc, 2, out + err)
                for w in words:
                    self.assertIn(w, err)


if __name__ == "__main__":
    unittest.main()
