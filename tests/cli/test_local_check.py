"""`run --local-check on` for kernel candidates (issue 50, item 4): a chained lane whose every stage
is recomputed by honest engines of the candidate's numerics from its own inputs. Correct candidates
are as good as an honest engine on every tiny preset; mutants whose own step is wrong are named at
the stage that introduces the error, with the local check's own line saying so; a bad value is exit 2.

Usage: test_local_check.py DRIFTSCOPE
"""
import subprocess
import sys
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"


def run(model, candidate, *extra):
    p = subprocess.run([DRIFTSCOPE, "run", "--model", f"synthetic:{model}", "--candidate", candidate, "--mode",
                        "chained", "--decode-steps", "2", *extra], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


# (case, preset, candidate)
CORRECT = [
    ("llama cpu-f16", "llama-tiny", "cpu-f16"),
    ("qwen2 cpu-f16", "qwen2-tiny", "cpu-f16"),
    ("qwen3 simt", "qwen3-tiny", "simt"),
    ("gpt2 cpu-f16", "gpt2-tiny", "cpu-f16"),
    ("qwen35 hybrid cpu-f16", "qwen35-tiny", "cpu-f16"),
]

# (mutant, preset, the stage its own step gets wrong, in layer 0 at step 0)
MUTANTS = [
    ("chain-add-idx", "qwen2-tiny", "residual_1"),
    ("norm-eps-outside", "llama-tiny", "attn_norm"),
    ("gelu-sigmoid", "gpt2-tiny", "gelu"),
]


class KernelCandidates(unittest.TestCase):
    def test_correct_candidates_are_as_good_as_an_honest_engine(self):
        for case, model, cand in CORRECT:
            with self.subTest(case):
                rc, out = run(model, cand, "--local-check", "on")
                self.assertEqual(rc, 0, out[-3000:])
                self.assertIn("Local check: as good as an honest engine of its numerics (one-rounding)", out)

    def test_mutants_are_worse_than_their_precision_explains_where_they_go_wrong(self):
        for mutant, model, stage in MUTANTS:
            with self.subTest(mutant):
                rc, out = run(model, f"mutant:{mutant}", "--local-check", "on")
                self.assertEqual(rc, 1, out[-3000:])
                self.assertIn(f"Local check: worse than its precision explains: first at {stage} of layer 0 "
                              "at step 0", out)

    def test_off_by_default_for_kernels_and_a_bad_value_is_exit_2(self):
        rc, out = run("qwen2-tiny", "cpu-f16")
        self.assertEqual(rc, 0, out[-3000:])
        self.assertNotIn("Local check", out)
        rc, out = run("qwen2-tiny", "cpu-f16", "--local-check", "always")
        self.assertEqual(rc, 2, out[-3000:])
        self.assertIn("--local-check", out)


if __name__ == "__main__":
    unittest.main()
