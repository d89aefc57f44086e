"""End-to-end tests of the driftscope CLI: exit codes, the table, and the HDF5 trace via h5py."""
import os
import subprocess
import sys
import tempfile
import unittest

import h5py

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


class Cli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_cpu_f16_passes_and_trace_lists_every_stage_of_both_layers(self):
        trace = self.path("ok.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16",
                           "--prompt-tokens", "4", "--trace", trace)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("PASS", out)
        with h5py.File(trace, "r") as f:
            self.assertEqual(f.attrs["schema"].decode() if isinstance(f.attrs["schema"], bytes)
                             else f.attrs["schema"], "driftscope-trace")
            self.assertEqual(int(f.attrs["version"]), 1)
            rows = f["summary"][:]
            stages = {(int(r["layer"]), r["stage"].decode()) for r in rows}
            expected = ["attn_norm", "q", "k", "v", "q_rope", "k_rope", "attn", "attn_out",
                        "residual_1", "ffn_norm", "gate", "up", "ffn_act", "down", "residual_2"]
            for layer in (0, 1):
                for s in expected:
                    self.assertIn((layer, s), stages)
            self.assertTrue(all(int(r["status"]) == 0 for r in rows))
            self.assertGreater(f["tensors/ref"].shape[0], 0)

    def test_mutant_exits_1_naming_residual_1_of_layer_0(self):
        trace = self.path("mut.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx",
                           "--prompt-tokens", "4", "--trace", trace)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("First failing stage: residual_1 of layer 0", out)
        self.assertIn("first mismatch at flat index", out)
        self.assertIn("ref[6..11]", out)  # around the first mismatch, flat index 8
        with h5py.File(trace, "r") as f:
            import json
            result = json.loads(f["result"][:].tobytes())
            self.assertEqual(result["first_failure"]["stage"], "residual_1")
            self.assertEqual(result["first_failure"]["layer"], 0)
            self.assertGreaterEqual(result["first_failure"]["first_mismatch"], 0)

    def test_report_prints_the_logits_and_drift_lines_run_printed(self):
        trace = self.path("both.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx",
                           "--mode", "both", "--prompt-tokens", "4", "--trace", trace)
        self.assertEqual(rc, 1, out + err)
        wanted = [line for line in out.splitlines() if line.startswith(("Logits (", "Drift begins", "No drift"))]
        self.assertEqual(len(wanted), 3, out)  # isolated and chained logits, and the drift sentence
        rc, rejudged, err = run("report", trace)
        self.assertEqual(rc, 1, rejudged + err)
        for line in wanted:
            self.assertIn(line, rejudged.splitlines())

    def test_bad_usage_and_input_exit_2(self):
        for args in (["run", "--model", "synthetic:nope"], ["run", "--candidate", "nope"],
                     ["run", "--mode", "sideways"], ["run", "--prompt-tokens", "0"], ["frobnicate"]):
            rc, out, err = run(*args)
            self.assertEqual(rc, 2, f"{args}: {out}{err}")
            self.assertTrue(err.strip() or out.strip())

    def test_a_refused_run_still_writes_junit_saying_why(self):
        import xml.etree.ElementTree as ET
        junit, trace, rejudged = self.path("refused.xml"), self.path("refused.h5"), self.path("report.xml")
        rc, out, err = run("run", "--model", "synthetic:qwen3-tiny", "--candidate", "cpu-f16-v1",
                           "--trace", trace, "--junit", junit)
        self.assertEqual(rc, 3, out + err)
        rc, out, err = run("report", trace, "--junit", rejudged)
        self.assertEqual(rc, 3, out + err)
        for path in (junit, rejudged):
            suites = ET.parse(path).getroot()
            self.assertEqual(suites.get("failures"), "1", path)
            failure = suites.find("testsuite/testcase/failure")
            self.assertIsNotNone(failure, path)
            self.assertEqual(failure.get("type"), "REFUSED", path)
            self.assertIn("cpu-f16-v1", failure.get("message"), path)

    def test_help_describes_every_flag(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        self.assertIn("run", out)
        rc, out, _ = run("run", "--help")
        self.assertEqual(rc, 0)
        for flag in ("--model", "--candidate", "--prompt-tokens", "--decode-steps", "--seed", "--mode", "--trace",
                     "--capture"):
            self.assertIn(flag, out)

    def test_candidates_lists_capabilities(self):
        rc, out, _ = run("candidates")
        self.assertEqual(rc, 0)
        self.assertIn("cpu-f16", out)
        self.assertIn("QkNorm", out)
        # Grouped: every name under its own heading, backends first.
        groups = {}
        heading = None
        for line in out.splitlines():
            if line.startswith("== "):
                heading = line[3:].split(":")[0].split(" (")[0]
            elif line and not line.startswith(" ") and heading:
                groups.setdefault(heading, []).append(line)
        self.assertIn("simt", groups["Backends"])
        self.assertIn("cpu-f16", groups["Backends"])
        self.assertTrue(groups["Mutants"] and all(n.startswith("mutant:") for n in groups["Mutants"]), groups)
        self.assertTrue(groups["Harness self-tests"] and all(n.startswith("selftest:") for n in groups["Harness self-tests"]))
        self.assertFalse([n for n in groups["Backends"] if ":" in n and not n.startswith("dump:")], groups["Backends"])

    def test_run_help_lists_the_presets(self):
        rc, out, _ = run("run", "--help")
        self.assertEqual(rc, 0)
        for preset in ("qwen2-tiny", "llama3-tiny", "gpt2-tiny", "qwen35-tiny", "qwen2.5-0.5b"):
            self.assertIn(preset, out)

    def test_out_of_bounds_requests_are_exit_2_naming_the_bound(self):
        cases = [
            (["--layers", "999"], "--layers 999: synthetic:qwen2-tiny has only 2 layer(s)"),
            (["--layers", "-1"], "--layers must not be negative"),
            (["--prompt-tokens", "100000"], "past synthetic:qwen2-tiny's context of"),
            (["--prompt-tokens", "2000", "--decode-steps", "100"], "= 2100 positions"),
            (["--seed", "-1"], "--seed"),
        ]
        for args, says in cases:
            with self.subTest(args=args):
                rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", *args)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(says, err)

    def test_a_passing_run_prints_a_summary_and_every_row_with_all(self):
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("judged stages pass (`--all` prints every row)", out)
        self.assertNotIn("ffn_act  ", out.split("Closest to its tolerance:")[0])
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--all")
        self.assertEqual(out.count(" PASS "), 33, out)  # embed, 2 x 15 layer stages, final_norm, logits

    def test_replay_finds_a_relative_model_from_another_directory(self):
        import shutil
        fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "models",
                               "qwen3-tiny.gguf")
        here, elsewhere = self.path("here"), self.path("elsewhere")
        os.makedirs(here)
        os.makedirs(elsewhere)
        shutil.copy(fixture, os.path.join(here, "m.gguf"))
        trace = self.path("rel.h5")
        p = subprocess.run([DRIFTSCOPE, "run", "--model", "m.gguf", "--candidate", "mutant:skip-qk-norm",
                            "--trace", trace], capture_output=True, text=True, timeout=240, cwd=here)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        p = subprocess.run([DRIFTSCOPE, "replay", trace, "--step", "0", "--layer", "0", "--stage", "q_norm"],
                           capture_output=True, text=True, timeout=240, cwd=elsewhere)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("The replay reproduces the stored metrics.", p.stdout)
        p = subprocess.run([DRIFTSCOPE, "replay", trace, "--step", "0", "--layer", "0", "--stage", "q_norm",
                            "--model", "nowhere.gguf"], capture_output=True, text=True, timeout=240, cwd=elsewhere)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("nowhere.gguf", p.stderr)

    def test_replay_of_a_passing_stage_needs_capture_inputs(self):
        # Without --capture inputs only failing steps keep their inputs; with it every step does, and
        # a passing stage replays (exit 0), under the same or another candidate.
        cases = [("all", 2, "were not captured"), ("inputs", 0, "The replay reproduces the stored metrics.")]
        for capture, want, says in cases:
            with self.subTest(capture=capture):
                trace = self.path(f"{capture}.h5")
                rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--trace",
                                   trace, "--capture", capture)
                self.assertEqual(rc, 0, out + err)
                rc, out, err = run("replay", trace, "--step", "0", "--layer", "1", "--stage", "attn")
                self.assertEqual(rc, want, out + err)
                self.assertIn(says, out + err)
        rc, out, err = run("replay", self.path("inputs.h5"), "--step", "0", "--layer", "1", "--stage", "attn",
                           "--candidate", "simt")
        self.assertEqual(rc, 0, out + err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
