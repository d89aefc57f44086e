"""fixtures/policies/default.yaml is the built-in policy written out: re-judging a trace under it
gives every stage the verdict the built-in policy gives, on clean and failing runs alike."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_YAML = os.path.join(ROOT, "fixtures", "policies", "default.yaml")
MODELS = ["synthetic:qwen2-tiny", "synthetic:llama-tiny", "synthetic:qwen3-tiny", "synthetic:gpt2-tiny",
          "synthetic:llama3-tiny"]
CANDIDATES = ["cpu-f16", "simt", "mutant:chain-add-idx", "mutant:gemv-half-accum"]


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def verdicts(trace, json_path, *policy):
    rc, out, err = run("report", trace, "--json", json_path, *policy)
    with open(json_path) as f:
        j = json.load(f)
    stages = [(r["step"], r["layer"], r["stage"], r["mode"], r["status"], r["failure"]) for r in j["stages"]]
    return rc, stages


class DefaultPolicyFile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        args = ["run", "--mode", "both", "--prompt-tokens", "5", "--decode-steps", "2", "--seed", "0", "--seed", "1",
                "--trace-dir", cls.tmp.name]
        for m in MODELS:
            args += ["--model", m]
        for c in CANDIDATES:
            args += ["--candidate", c]
        rc, out, err = run(*args)
        cls.matrix = (rc, out, err)
        cls.traces = sorted(glob.glob(os.path.join(cls.tmp.name, "*.h5")))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_matrix_ran(self):
        self.assertIn(self.matrix[0], (0, 1), self.matrix[1] + self.matrix[2])
        self.assertGreaterEqual(len(self.traces), 2 * len(MODELS) * 2, self.matrix[1])

    def test_every_trace_gets_the_built_in_verdicts(self):
        passing = failing = 0
        for trace in self.traces:
            with self.subTest(os.path.basename(trace)):
                rc_builtin, builtin = verdicts(trace, trace + ".builtin.json")
                rc_file, from_file = verdicts(trace, trace + ".file.json", "--policy", DEFAULT_YAML)
                self.assertTrue(builtin, "no stage was judged")
                self.assertEqual(rc_builtin, rc_file)
                self.assertEqual(builtin, from_file)
                passing += rc_builtin == 0
                failing += rc_builtin == 1
        # Both verdicts occur, so the comparison covers passes and failures.
        self.assertGreater(passing, 0)
        self.assertGreater(failing, 0)

    def test_each_floor_line_is_what_makes_them_equal(self):
        # Without `floor_relief: 8` the file is stricter than the built-in policy on some clean
        # trace, and without `floor_rms: 2` it passes the reduced-precision accumulator the
        # built-in policy fails: each line is load-bearing, and the comparison above can tell.
        with open(DEFAULT_YAML) as f:
            text = f.read()
        for line in ("    floor_relief: 8\n", "    floor_rms: 2\n"):
            with self.subTest(line.strip()):
                self.assertIn(line, text)
                edited = os.path.join(self.tmp.name, "without-" + line.strip().split(":")[0] + ".yaml")
                with open(edited, "w") as f:
                    f.write(text.replace(line, ""))
                differs = []
                for trace in self.traces:
                    _, builtin = verdicts(trace, trace + ".builtin.json")
                    _, other = verdicts(trace, trace + ".edited.json", "--policy", edited)
                    if builtin != other:
                        differs.append(os.path.basename(trace))
                self.assertTrue(differs, f"no trace tells {line.strip()} apart")

if __name__ == "__main__":
    unittest.main(verbosity=2)
