"""Issue 52: Python candidates (`--candidate py:FILE.py[:NAME]`, docs/python.md) through the real
CLI. A numpy candidate passes a tiny model in both modes, in a batch and in `check`; bugs planted in
it are named at their stage, layer and step; a candidate that raises, hangs, dies, prints to
stdout, returns a wrong shape or dtype, leaves an output out or returns NaN ends exactly as a C++
plugin would (exit 1 or 4, the stage named); a file that is not a usable candidate is exit 2
naming the file. The candidates live in python_candidates/misbehaving.py and examples/."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py

DRIFTSCOPE = sys.argv.pop(1)
SOURCE = sys.argv.pop(1)
EXAMPLE = os.path.join(SOURCE, "examples", "numpy_rmsnorm.py")
MISBEHAVING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_candidates", "misbehaving.py")
# Debian's python3, which has numpy (the python3 first on a developer's PATH may not).
ENV = dict(os.environ, DRIFTSCOPE_PYTHON="/usr/bin/python3")
TINY = ["--model", "synthetic:llama-tiny", "--fill", "reference"]


def run_cli(*args, timeout=300, env=ENV, cwd=None):
    return subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


class PythonCandidates(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_json(self, candidate, *extra):
        out = os.path.join(self.tmp.name, "r.json")
        p = run_cli("run", *TINY, "--candidate", candidate, "--json", out, *extra)
        report = None
        if os.path.exists(out):
            with open(out) as f:
                report = json.load(f)
        return p, report

    def test_the_numpy_example_passes_both_modes_and_records_its_file(self):
        trace = os.path.join(self.tmp.name, "t.h5")
        p, report = self.run_json(f"py:{EXAMPLE}", "--mode", "both", "--decode-steps", "2", "--trace", trace)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(report["failed"], 0)
        self.assertGreater(report["judged"], 0)
        with h5py.File(trace) as f:
            cand = json.loads(f.attrs["run"])["candidate"]
        self.assertEqual(cand["name"], "numpy-rmsnorm")
        self.assertEqual(cand["plugin"]["path"], EXAMPLE)
        self.assertEqual(cand["plugin"]["version"], "1.0")
        self.assertIn("driftscope-python", cand["plugin"]["sdk_version"])
        self.assertEqual(len(cand["plugin"]["sha256"]), 64)

    def test_a_batch_is_served_one_sequence_at_a_time_and_passes(self):
        p, report = self.run_json(f"py:{EXAMPLE}", "--batch", "3", "--batch-prompts", "4,1,7", "--decode-steps", "2")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("one sequence at a time", p.stdout)

    def test_a_batching_candidate_gets_the_batch_at_once_and_a_row_bug_is_a_leak(self):
        batch = ["--model", "synthetic:qwen2-tiny", "--batch", "3", "--batch-prompts", "4,1,7", "--decode-steps", "2"]
        out = os.path.join(self.tmp.name, "b.json")
        p = run_cli("run", *batch, "--fill", "reference", "--candidate", f"py:{MISBEHAVING}:batched", "--json", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("batched takes decoder batched", p.stdout)
        p = run_cli("run", *batch, "--fill", "reference", "--candidate", f"py:{MISBEHAVING}:neighbour-row",
                    "--json", out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        with open(out) as f:
            first = json.load(f)["first_failure"]
        self.assertEqual((first["stage"], first["layer"], first["step"], first["status"], first["seq"]),
                         ("attn_norm", 0, 0, "leak", 1), first)

    def test_moe_limits_reach_the_gate(self):
        p = run_cli("run", "--model", "synthetic:qwen3moe-tiny", "--fill", "reference",
                    "--candidate", f"py:{MISBEHAVING}:top-two-experts")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("top-4 routing, past the top-2 its MoE kernels keep", p.stdout + p.stderr)

    def test_planted_bugs_and_broken_contracts_end_as_a_plugins_would(self):
        # (candidate, exit code, first failing stage, layer, step, status, words its note holds)
        cases = [
            ("layer-zero-weight", 1, "ffn_norm", 1, 0, "fail", ""),
            ("decode-stale", 1, "attn_norm", 0, 1, "fail", ""),
            ("raises", 4, "attn_norm", 1, 0, "crashed", "ValueError: planted failure in layer 1 at " + MISBEHAVING),
            ("dies", 4, "attn_norm", 1, 0, "crashed", "killed by signal 9"),
            ("wrong-dtype", 4, "attn_norm", 0, 0, "crashed", "has dtype int64"),
            ("missing-output", 4, "attn_norm", 0, 0, "crashed", "missing: attn_norm"),
            ("wrong-shape", 1, "attn_norm", 0, 0, "shape-mismatch", "candidate shape [4, 63] vs reference [4, 64]"),
            ("nans", 1, "ffn_norm", 1, 0, "nan", ""),
        ]
        for name, code, stage, layer, step, status, words in cases:
            with self.subTest(candidate=name):
                p, report = self.run_json(f"py:{MISBEHAVING}:{name}", "--decode-steps", "2")
                self.assertEqual(p.returncode, code, p.stdout + p.stderr)
                first = report["first_failure"]
                self.assertEqual((first["stage"], first["layer"], first["step"], first["status"]),
                                 (stage, layer, step, status), first)
                self.assertIn(words, first["note"])

    def test_a_hang_is_bounded_by_timeout(self):
        p, report = self.run_json(f"py:{MISBEHAVING}:hangs", "--timeout", "3")
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertEqual((report["first_failure"]["stage"], report["first_failure"]["layer"]), ("attn_norm", 1))
        self.assertIn("hung: no answer within --timeout 3 s", report["first_failure"]["note"])

    def test_prints_reach_stderr_never_the_messages_or_stdout(self):
        p, report = self.run_json(f"py:{MISBEHAVING}:prints")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("prints: step", p.stdout)
        self.assertNotIn("raw bytes on fd 1", p.stdout)
        self.assertIn("prints: step", p.stderr)

    def test_a_missing_weight_is_a_crash_while_loading(self):
        p, _ = self.run_json(f"py:{MISBEHAVING}:missing-weight")
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("while loading", p.stdout)
        self.assertIn("no weight 'blk.0.no_such.weight'", p.stdout)

    def test_files_that_are_no_candidate_are_bad_input_naming_the_file(self):
        files = {"broken.py": "import driftscope as ds\nclass A(ds.Candidate):\n    def plan(self) return []\n",
                 "needs.py": "import a_package_nobody_installed\n", "empty.py": "x = 1\n"}
        for name, text in files.items():
            with open(os.path.join(self.tmp.name, name), "w") as f:
                f.write(text)
        broken, needs, empty = (os.path.join(self.tmp.name, n) for n in files)
        cases = [
            (f"py:{broken}", [f"{broken}:3: syntax error"], {}),
            (f"py:{needs}", ["No module named 'a_package_nobody_installed'", f"{needs}:1"], {}),
            (f"py:{empty}", ["defines no subclass of driftscope.Candidate"], {}),
            (f"py:{MISBEHAVING}", ["pick one with", "layer-zero-weight"], {}),
            (f"py:{MISBEHAVING}:no-such", ["has no candidate 'no-such'", "raises"], {}),
            (f"py:{MISBEHAVING}:unknown-op", ["declares an op 'FlashMLA'", "RMSNorm"], {}),
            (f"py:{self.tmp.name}/absent.py", ["absent.py: no such file"], {}),
            (f"py:{EXAMPLE}", ["cannot run Python '/no/python'"], {"DRIFTSCOPE_PYTHON": "/no/python"}),
        ]
        for spec, words, env in cases:
            with self.subTest(spec=spec, env=env):
                p = run_cli("run", *TINY, "--candidate", spec, env=dict(ENV, **env))
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                for w in words:
                    self.assertIn(w, p.stderr)

    def test_a_python_without_numpy_is_named_with_the_fix(self):
        # A venv without system site packages is a Python without numpy.
        venv = os.path.join(self.tmp.name, "bare")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
        p = run_cli("run", *TINY, "--candidate", f"py:{EXAMPLE}", "--python", os.path.join(venv, "bin", "python3"))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("has no numpy", p.stderr)

    def test_check_judges_it_and_says_what_it_cannot(self):
        out = os.path.join(self.tmp.name, "check.json")
        p = run_cli("check", *TINY, "--candidate", f"py:{EXAMPLE}", "--decode-steps", "1", "--json", out, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"memory errors\s+SKIPPED\s+a Python candidate")
        self.assertRegex(p.stdout, r"both modes\s+PASS")
        self.assertRegex(p.stdout, r"batches\s+PASS")

    def test_a_part_that_fails_a_stage_and_then_crashes_names_both(self):
        # check's line for a part names its first failing stage; a crash after it is why the part is
        # CRASHED, so the line says that too.
        out = os.path.join(self.tmp.name, "check.json")
        p = run_cli("check", *TINY, "--candidate", f"py:{MISBEHAVING}:wrong-then-raises", "--decode-steps", "0",
                    "--json", out, timeout=900)
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        with open(out) as f:
            both = next(part for part in json.load(f)["parts"] if part["name"] == "both modes")
        self.assertEqual(both["exit_code"], 4, both)
        self.assertRegex(both["verdict"], r"^ffn_norm of layer 0, step 0 \(isolated\): .*; then candidate crashed in "
                         r"step 'rmsnorm_attn': .*planted failure in layer 1")

    def test_verify_does_not_pass_a_cheat_that_ignores_its_inputs(self):
        out = os.path.join(self.tmp.name, "verify.json")
        p = run_cli("verify", *TINY, "--candidate", f"py:{MISBEHAVING}:memoized", "--json", out, timeout=900)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            findings = json.load(f)["findings"]
        self.assertTrue(any(f["stage"] == "attn_norm" for f in findings), findings)

    def test_replay_reruns_the_python_step_of_a_stored_stage(self):
        trace = os.path.join(self.tmp.name, "lz.h5")
        p, _ = self.run_json(f"py:{MISBEHAVING}:layer-zero-weight", "--trace", trace, "--capture", "all")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        where = ["--step", "0", "--layer", "1", "--stage", "ffn_norm"]
        again = run_cli("replay", trace, *where)
        self.assertIn("The replay reproduces the stored metrics", again.stdout, again.stdout + again.stderr)
        fixed = run_cli("replay", trace, *where, "--candidate", f"py:{MISBEHAVING}:correct")
        self.assertRegex(fixed.stdout, r"replayed: .* ffn_norm +isolated PASS")


if __name__ == "__main__":
    unittest.main(verbosity=2)
