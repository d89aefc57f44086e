"""What the console says when a run or a diff has a lot to say: bounds named instead of absurd
numbers, a warning when two traces are runs of different things, one line for decode steps one
trace lacks, and a summary of a completeness refusal with the full list kept in the trace/JSON."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "models")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


class ConsoleSummaries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.traces = {}
        # (seed, decode steps) -> trace of cpu-f16 on qwen2-tiny, 4 prompt tokens
        for seed, steps in ((0, 0), (1, 0), (0, 2)):
            path = os.path.join(cls.tmp.name, f"s{seed}-d{steps}.h5")
            rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--prompt-tokens",
                               "4", "--seed", str(seed), "--decode-steps", str(steps), "--trace", path)
            assert rc == 0, out + err
            cls.traces[(seed, steps)] = path

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_only_failures_drops_the_passing_rows_listed_beside_the_first_failure(self):
        # Issue 49, item 4: the default table of a failing run lists the failures and the passing
        # rows before the first failure in its block (residual_1 of layer 0, step 0: attn_norm ..
        # attn_out); --only-failures lists failing rows alone, in run and in report alike.
        trace = os.path.join(self.tmp.name, "mutant.h5")
        rc, default, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx",
                               "--mode", "both", "--trace", trace)
        self.assertEqual(rc, 1, default + err)
        rc, only, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx",
                            "--mode", "both", "--only-failures")
        self.assertEqual(rc, 1, only + err)
        passing = [line for line in default.splitlines() if " isolated PASS" in line]
        self.assertEqual({tuple(line.split()[:2]) for line in passing}, {("0", "0")}, default)
        self.assertEqual([line.split()[2] for line in passing],
                         ["attn_norm", "q", "k", "v", "q_rope", "k_rope", "attn", "attn_out"], default)
        self.assertNotIn(" PASS ", only)
        self.assertIn("residual_1   isolated FAIL", only)
        self.assertNotEqual(default, only)
        rc, report_only, err = run("report", trace, "--only-failures")
        self.assertEqual(rc, 1, report_only + err)
        self.assertNotIn(" PASS ", report_only)

    def test_diff_factor_out_of_bounds_is_exit_2_naming_the_bound(self):
        a = self.traces[(0, 0)]
        for factor in ("0", "-3", "0.5", "nan", "inf", "1e309", "1e9", "two"):
            with self.subTest(factor=factor):
                rc, out, err = run("diff", a, a, "--factor", factor)
                self.assertEqual(rc, 2, out + err)
                self.assertIn("--factor", err)
                self.assertIn("from 1 to 1e+06", err)
                self.assertNotIn("NO REGRESSION", out)
        rc, out, err = run("diff", a, a, "--factor", "1.5")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("NO REGRESSION", out)

    def test_diff_of_one_case_warns_of_nothing(self):
        a = self.traces[(0, 0)]
        rc, out, err = run("diff", a, a)
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("warning", out)

    def test_diff_of_different_seeds_warns_before_the_verdict(self):
        rc, out, err = run("diff", self.traces[(0, 0)], self.traces[(1, 0)])
        # Other weights, other errors: whether one grew past 2x is chance, but either verdict must
        # come after the warning that the runs differ.
        self.assertIn(rc, (0, 1), out + err)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("warning: the traces are runs of different keys"), out)
        self.assertRegex(lines[1], r"^  seed +baseline 0 +current 1$")
        self.assertTrue(any(l.startswith("  prompt tokens") for l in lines[1:4]), out)  # seeded prompt
        verdict = next(i for i, l in enumerate(lines) if l in ("NO REGRESSION", "REGRESSED"))
        self.assertEqual(lines[verdict] == "NO REGRESSION", rc == 0, out)
        self.assertIn("warning: different seed, prompt tokens", lines[verdict - 1])

    def test_diff_of_different_decode_steps_says_so_in_one_line(self):
        more, fewer = self.traces[(0, 2)], self.traces[(0, 0)]
        rc, out, err = run("diff", more, fewer)
        self.assertEqual(rc, 1, out + err)  # the steps the baseline judged are not judged now
        self.assertIn("decode steps", out.splitlines()[1] + out.splitlines()[2])
        gone = [l for l in out.splitlines() if l.startswith("steps-gone")]
        self.assertEqual(len(gone), 1, out)
        self.assertIn("model step(s) 1-2", gone[0])
        self.assertNotIn("disappeared", out)
        self.assertLess(len(out.splitlines()), 12, out)
        rc, out, err = run("diff", fewer, more)
        self.assertEqual(rc, 0, out + err)  # more steps now: new, not a regression
        self.assertEqual(len([l for l in out.splitlines() if l.startswith("steps-new")]), 1, out)

    def test_a_100_layer_model_missing_its_tensors_is_summarised(self):
        model = os.path.join(self.tmp.name, "llama-100")
        shutil.copytree(os.path.join(FIXTURES, "llama-tiny"), model)
        with open(os.path.join(model, "config.json")) as f:
            config = json.load(f)
        config["num_hidden_layers"] = 100  # the file holds tensors of 2 layers
        with open(os.path.join(model, "config.json"), "w") as f:
            json.dump(config, f)
        trace, report = os.path.join(self.tmp.name, "refused.h5"), os.path.join(self.tmp.name, "refused.json")
        rc, out, err = run("run", "--model", model, "--candidate", "cpu-f16", "--trace", trace, "--json", report)
        self.assertEqual(rc, 2, out + err)
        self.assertLess(len(err), 2000, err)
        self.assertIn("882 required tensor(s) missing", err)  # 98 layers x 9 roles
        self.assertIn("per role: attn_k x98, attn_norm x98,", err)
        self.assertIn("first: blk.2.attn_k.weight (role attn_k), blk.2.attn_norm.weight", err)
        self.assertIn("(and 876 more)", err)
        self.assertNotIn("blk.99.", err)
        with open(report) as f:
            stop = json.load(f)["stop_reason"]
        self.assertIn("blk.99.ffn_down.weight (role ffn_down)", stop)
        rc, out, err = run("report", trace)  # the trace keeps every name too
        self.assertEqual(rc, 2, out + err)
        self.assertIn("blk.99.ffn_down.weight", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
