"""`run --baseline B` through the real CLI: a candidate judged against another candidate on the same
isolated inputs (docs/cli.md). The old-vs-new kernel check and the fused-vs-plain GDN
gate, each as a table of (candidate, baseline) cases with the exit code and first failure they must
give; then the refusals (a baseline lacking an op: 3; an unknown name or a chained mode: 2), a
baseline crash (4, named as the baseline's), and `report` re-judging against the baseline."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STRICT = os.path.join(ROOT, "fixtures", "policies", "strict.yaml")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


def run_attrs(trace):
    with h5py.File(trace, "r") as f:
        raw = f.attrs["run"]
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw)


# (case name, model, candidate, baseline, extra flags, exit code, first failure (step, layer, stage) or None)
JUDGED = [
    # A 1-ULP rounding bug only a bit-level comparison with the correct kernels shows.
    ("half_before_bias_vs_simt", "synthetic:qwen2-tiny", "mutant:half-before-bias", "simt", [], 1, (0, 0, "q")),
    ("simt_vs_simt", "synthetic:qwen2-tiny", "simt", "simt", [], 0, None),
    ("layernorm_no_mean_sub_vs_simt", "synthetic:gpt2-tiny", "mutant:layernorm-no-mean-sub", "simt", [], 1,
     (0, 0, "ln_1")),
    ("simt_vs_simt_in_process", "synthetic:qwen2-tiny", "simt", "simt", ["--no-isolate"], 0, None),
    # Both start at --from-step on the oracle's cache: a decode step alone, against the baseline.
    ("half_before_bias_from_step_2", "synthetic:qwen2-tiny", "mutant:half-before-bias", "simt",
     ["--decode-steps", "2", "--from-step", "2"], 1, (2, 0, "q")),
    # The fused GDN decode ops against the plain ones (the baseline runs plain by default).
    ("gdn_inplace_vs_plain", "synthetic:qwen35-tiny", "simt", "simt-gdn-plain",
     ["--gdn-variant", "inplace", "--decode-steps", "2"], 0, None),
    ("gdn_conv_update_vs_plain", "synthetic:qwen35-tiny", "simt", "simt",
     ["--gdn-variant", "conv-update", "--decode-steps", "2"], 0, None),
    ("gdn_ids_ignored_vs_plain", "synthetic:qwen35-tiny", "mutant:gdn-ids-ignored", "simt",
     ["--gdn-variant", "ids,conv-update-ids", "--decode-steps", "2"], 1, (1, 0, "conv")),
]


class Judged(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_cases_exit_and_fail_first_where_documented(self):
        for name, model, cand, base, extra, want_rc, want_first in JUDGED:
            with self.subTest(name):
                js, trace = os.path.join(self.tmp.name, name + ".json"), os.path.join(self.tmp.name, name + ".h5")
                rc, out, err = run("run", "--model", model, "--candidate", cand, "--baseline", base, "--policy",
                                   STRICT, "--json", js, "--trace", trace, *extra)
                self.assertEqual(rc, want_rc, out + err)
                self.assertIn(f"against baseline {base}", out.splitlines()[0])
                with open(js) as f:
                    report = json.load(f)
                self.assertEqual(report["baseline"], base)
                self.assertIn(f"judged against baseline {base}", report["verdict"])
                self.assertEqual(run_attrs(trace)["baseline"]["name"], base)
                first = report["first_failure"]
                if want_first is None:
                    self.assertIsNone(first)
                    # Two runs of one kernel on one input: not close, identical.
                    for s in report["stages"]:
                        self.assertEqual(float(s["metrics"]["max_abs"]), 0.0, f"{s['stage']} layer {s['layer']}")
                else:
                    self.assertEqual((first["step"], first["layer"], first["stage"]), want_first, out)

    def test_report_rejudges_against_the_baseline_and_says_so(self):
        trace = os.path.join(self.tmp.name, "hbb.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:half-before-bias",
                           "--baseline", "simt", "--policy", STRICT, "--trace", trace)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("base[", out)  # the values shown under the failure are the baseline's
        rc, out, err = run("report", trace, "--policy", STRICT)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("against baseline simt (not the oracle)", out.splitlines()[0])
        self.assertIn("First failing stage: q of layer 0 at step 0", out)
        # The default policy re-judges the same stored baseline tensors: the 1-ULP bug is below it.
        rc, out, err = run("report", trace)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("judged against baseline simt", out)
        # diff warns when one trace was held to a baseline and the other to the oracle.
        oracle = os.path.join(self.tmp.name, "oracle.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:half-before-bias",
                           "--trace", oracle)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run("diff", oracle, trace)
        self.assertIn("judged against baseline the oracle   current --baseline simt", out)
        # Its stored tensors are the baseline's: not golden data of the oracle.
        rc, out, err = run("export", trace, "--format", "npy", "--out", os.path.join(self.tmp.name, "golden"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--baseline simt", err)


class Refused(unittest.TestCase):
    def test_a_baseline_lacking_an_op_is_refused_naming_it(self):
        rc, out, err = run("run", "--model", "synthetic:qwen35-tiny", "--candidate", "simt", "--baseline",
                           "simt-gdn-plain", "--baseline-gdn-variant", "inplace")
        self.assertEqual(rc, 3, out + err)
        self.assertIn("--baseline simt-gdn-plain", err)
        self.assertIn("GdnInplace", err)

    def test_a_baseline_lacking_a_family_op_is_refused(self):
        rc, out, err = run("run", "--model", "synthetic:qwen3-tiny", "--candidate", "simt", "--baseline",
                           "cpu-f16-v1")
        self.assertEqual(rc, 3, out + err)
        self.assertIn("--baseline cpu-f16-v1", err)
        self.assertIn("QkNorm", err)

    def test_bad_usage_is_exit_2_naming_the_flag(self):
        cases = [
            ("unknown_name", ["--baseline", "no-such-kernel"], ["--baseline", "no-such-kernel", "known: ", "simt"]),
            ("chained", ["--baseline", "simt", "--mode", "chained"], ["--mode chained", "isolated mode only"]),
            ("both", ["--baseline", "simt", "--mode", "both"], ["--mode both", "isolated mode only"]),
            ("dump", ["--baseline", "dump:/nonexistent"], ["--baseline dump:/nonexistent"]),
            ("variant_alone", ["--baseline-gdn-variant", "inplace"], ["--baseline-gdn-variant", "no --baseline"]),
            ("bad_variant", ["--baseline", "simt", "--baseline-gdn-variant", "sideways"],
             ["--baseline-gdn-variant", "sideways"]),
        ]
        for name, flags, needles in cases:
            with self.subTest(name):
                rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "simt", *flags)
                self.assertEqual(rc, 2, out + err)
                for n in needles:
                    self.assertIn(n, err)


class Crash(unittest.TestCase):
    def test_a_baseline_crash_is_the_baselines_never_a_pass(self):
        for name, extra in (("child_process", []), ("hang", ["--timeout", "2"])):
            with self.subTest(name):
                base = "selftest:hang-layer1" if name == "hang" else "selftest:segv-layer1"
                rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--baseline",
                                   base, *extra)
                self.assertEqual(rc, 4, out + err)
                self.assertIn(f"baseline {base} crashed", out)
                self.assertNotIn("candidate crashed", out)


if __name__ == "__main__":
    unittest.main()
