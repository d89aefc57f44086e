"""Nightly scale, end to end: a matrix run split over shards, merged, re-judged and diffed."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import h5py

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
MUTANT = "mutant:chain-add-idx"
MATRIX = ["--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--candidate", MUTANT,
          "--seed", "0", "--seed", "1", "--prompt-tokens", "4"]
# Model-major, then candidate, then seed: case k of 4.
CASES = [("cpu-f16", 0), ("cpu-f16", 1), (MUTANT, 0), (MUTANT, 1)]


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


def key(candidate, seed):
    return f"synthetic:qwen2-tiny x {candidate} x seed {seed}"


class TempDirCase(unittest.TestCase):
    """A class-wide temporary directory (setUpClass creates cls.tmp) and paths inside it."""

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)


class Shards(TempDirCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.join(cls.tmp.name, "traces")
        cls.shards = [run("run", *MATRIX, "--shard", f"{i}/2", "--trace-dir", cls.dir,
                          "--junit", cls.path(f"shard{i}.xml"), "--json", cls.path(f"shard{i}.json"))
                      for i in (0, 1)]
        cls.merged = cls.path("nightly.h5")
        cls.merge = run("merge", "-o", cls.merged, *sorted(glob.glob(os.path.join(cls.dir, "*.h5"))))

    def test_each_shard_runs_its_cases_and_names_the_mutant_case(self):
        for i, (rc, out, err) in enumerate(self.shards):
            # Round-robin: shard i holds cases i and i + 2, one cpu-f16 and one mutant case each.
            self.assertEqual(rc, 1, out + err)
            summary = out[out.index("Matrix summary"):]
            for k in (i, i + 2):
                candidate, seed = CASES[k]
                line = next(l for l in summary.splitlines() if l.startswith(f"{k}/4 "))
                self.assertIn(candidate, line)
                if candidate == MUTANT:
                    self.assertIn("FAIL", line)
                    self.assertIn("residual_1 of layer 0", line)
                else:
                    self.assertIn("PASS", line)
            self.assertNotIn(f"{1 - i}/4 ", summary)

    def test_union_of_shard_traces_is_exactly_the_matrix(self):
        files = sorted(os.listdir(self.dir))
        self.assertEqual(files, [f"case-{k}-of-4.h5" for k in range(4)])
        seen = []
        for k in range(4):
            with h5py.File(os.path.join(self.dir, f"case-{k}-of-4.h5"), "r", swmr=True) as f:
                case = json.loads(f.attrs["run"])["case"]
            self.assertEqual((case["index"], case["of"], case["shard"]), (k, 4, f"{k % 2}/2"))
            seen.append((case["candidate"], case["seed"]))
        self.assertEqual(seen, CASES)

    def test_case_command_line_reproduces_the_case_alone(self):
        with h5py.File(os.path.join(self.dir, "case-2-of-4.h5"), "r", swmr=True) as f:
            command = json.loads(f.attrs["run"])["case"]["command_line"]
        self.assertNotIn("--shard", command)
        p = subprocess.run(command + " --trace " + self.path("alone.h5"), shell=True, capture_output=True,
                           text=True, timeout=240)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("First failing stage: residual_1 of layer 0", p.stdout)
        self.assertNotIn("Matrix summary", p.stdout)

    def test_reports_cover_every_case_of_the_shard(self):
        suites = ET.parse(self.path("shard0.xml")).getroot().findall("testsuite")
        self.assertEqual([s.get("name") for s in suites],
                         [f"driftscope.{key(*CASES[0])}", f"driftscope.{key(*CASES[2])}"])
        self.assertEqual(suites[0].get("failures"), "0")
        self.assertNotEqual(suites[1].get("failures"), "0")
        with open(self.path("shard1.json")) as f:
            j = json.load(f)
        self.assertEqual(j["exit_code"], 1)
        self.assertEqual([c["case"]["index"] for c in j["cases"]], [1, 3])
        self.assertEqual(j["cases"][1]["report"]["first_failure"]["stage"], "residual_1")

    def test_merge_holds_every_case_once_with_an_index(self):
        rc, out, err = self.merge
        self.assertEqual(rc, 0, out + err)
        with h5py.File(self.merged, "r") as f:
            self.assertEqual(f.attrs["schema"], "driftscope-trace")
            self.assertEqual(int(f.attrs["version"]), 1)
            self.assertEqual(int(f.attrs["merged"]), 1)
            self.assertEqual(sorted(f["cases"].keys(), key=int), ["0", "1", "2", "3"])
            index = f["case_index"][:]
            self.assertEqual([(r["candidate"].decode(), int(r["seed"])) for r in index], CASES)
            self.assertEqual([int(r["exit_code"]) for r in index], [0, 0, 1, 1])
            self.assertTrue(all(int(r["finished"]) == 1 for r in index))
            self.assertTrue(all(r["source"].decode().endswith(f"case-{k}-of-4.h5") for k, r in enumerate(index)))
            for k in range(4):
                case = f[f"cases/{k}"]
                self.assertEqual(json.loads(case.attrs["run"])["candidate"]["name"], CASES[k][0])
                self.assertGreater(case["summary"].shape[0], 0)
                self.assertGreater(case["tensors/ref"].shape[0], 0)

    def test_report_of_merged_file_rejudges_every_case(self):
        rc, out, err = run("report", self.merged, "--junit", self.path("merged.xml"))
        self.assertEqual(rc, 1, out + err)
        summary = out[out.index("Matrix summary"):]
        mutant = next(l for l in summary.splitlines() if l.startswith("2/4 "))
        self.assertIn(MUTANT, mutant)
        self.assertIn("residual_1 of layer 0", mutant)
        self.assertEqual(out.count("=== case"), 4)
        self.assertEqual(len(ET.parse(self.path("merged.xml")).getroot().findall("testsuite")), 4)

    def test_diff_of_merged_files_matches_cases_by_key(self):
        rc, out, err = run("diff", self.merged, self.merged)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("4 case(s) matched, 0 only in the baseline", out)
        # Tonight's file lacks case 3: the case disappeared, a regression named by its key.
        partial = self.path("partial.h5")
        rc, out, err = run("merge", "-o", partial, *[os.path.join(self.dir, f"case-{k}-of-4.h5") for k in range(3)])
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run("diff", self.merged, partial)
        self.assertEqual(rc, 1, out + err)
        self.assertIn(f"case-disappeared  {key(*CASES[3])}", out)
        self.assertIn("REGRESSED", out)
        # The other way round the extra case is only new.
        rc, out, err = run("diff", partial, self.merged)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(f"case-new          {key(*CASES[3])}", out)
        # A single trace against a merged file: its one case is matched by key.
        rc, out, err = run("diff", os.path.join(self.dir, "case-1-of-4.h5"), self.merged)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("1 case(s) matched", out)

    def test_replay_a_case_of_the_merged_file_reproduces_its_metrics(self):
        # Case 2 is the mutant at seed 0: it fails at residual_1 of layer 0 and stored that step's inputs.
        rc, out, err = run("replay", self.merged, "--case", "2", "--step", "0", "--layer", "0",
                           "--stage", "residual_1")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("The replay reproduces the stored metrics.", out)
        stored = next(l for l in out.splitlines() if l.strip().startswith("stored:"))
        replayed = next(l for l in out.splitlines() if l.strip().startswith("replayed:"))
        stored, replayed = stored.split(":", 1)[1].strip(), replayed.split(":", 1)[1].strip()
        self.assertEqual(stored, replayed)
        # The same stage of the single-case trace gives the same line.
        rc1, out1, err1 = run("replay", os.path.join(self.dir, "case-2-of-4.h5"), "--step", "0", "--layer", "0",
                              "--stage", "residual_1")
        self.assertEqual(rc1, 1, out1 + err1)
        self.assertIn(stored, out1)

    def test_replay_of_a_merged_file_needs_a_valid_case(self):
        stage = ["--step", "0", "--layer", "0", "--stage", "residual_1"]
        rc, out, err = run("replay", self.merged, *stage)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--case K", err)
        self.assertIn(self.merged, err)
        for bad in ("4", "-1"):
            rc, out, err = run("replay", self.merged, "--case", bad, *stage)
            self.assertEqual(rc, 2, out + err)
            self.assertIn(f"--case {bad}", err)
        self.assertNotIn("Traceback", err)

    def test_merging_a_merged_file_flattens_it(self):
        extra = self.path("extra.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--seed", "5",
                           "--prompt-tokens", "4", "--trace", extra)
        self.assertEqual(rc, 0, out + err)
        again = self.path("again.h5")
        rc, out, err = run("merge", "-o", again, extra, self.merged)
        self.assertEqual(rc, 0, out + err)
        with h5py.File(again, "r") as f:
            self.assertEqual(len(f["cases"]), 5)
            index = f["case_index"][:]
            # Matrix cases first, in matrix order; the single run after them.
            self.assertEqual([int(r["seed"]) for r in index], [0, 1, 0, 1, 5])
            self.assertTrue(index[0]["source"].decode().endswith("case-0-of-4.h5"))

    def test_unfinished_run_is_merged_and_marked(self):
        killed = self.path("killed.h5")
        shutil.copy(os.path.join(self.dir, "case-0-of-4.h5"), killed)
        with h5py.File(killed, "r+") as f:
            run_json = json.loads(f.attrs["run"])
            run_json["seed"] = 42
            del run_json["case"]
            f.attrs["run"] = json.dumps(run_json)
            f["result"].resize((0,))  # what a run killed before its end leaves
        out_file = self.path("with_killed.h5")
        rc, out, err = run("merge", "-o", out_file, killed, os.path.join(self.dir, "case-1-of-4.h5"))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("INCOMPLETE", out)
        with h5py.File(out_file, "r") as f:
            rows = {int(r["seed"]): r for r in f["case_index"][:]}
            self.assertEqual(int(rows[42]["finished"]), 0)
            self.assertEqual(int(rows[42]["exit_code"]), -1)
        rc, out, err = run("report", out_file)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("INCOMPLETE", out)
        self.assertIn("did not finish", out)

    def test_a_run_killed_mid_write_is_merged_whole(self):
        killed_dir = self.path("killed")
        # The runner raises SIGKILL after its first per-layer flush: a real SWMR file cut short.
        env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS="1")
        p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16",
                            "--seed", "7", "--prompt-tokens", "4", "--shard", "0/1", "--trace-dir", killed_dir],
                           env=env, capture_output=True, text=True, timeout=240)
        self.assertEqual(p.returncode, -9, p.stdout + p.stderr)
        killed = os.path.join(killed_dir, "case-0-of-1.h5")
        with h5py.File(killed, "r", swmr=True) as f:
            rows = f["summary"].shape[0]
        self.assertGreater(rows, 0)
        out_file = self.path("with_sigkill.h5")
        rc, out, err = run("merge", "-o", out_file, killed, os.path.join(self.dir, "case-1-of-4.h5"))
        self.assertEqual(rc, 0, out + err)
        with h5py.File(out_file, "r") as f:
            index = f["case_index"][:]
            self.assertEqual([int(r["finished"]) for r in index], [0, 1])  # case 0 of 1 sorts first
            self.assertEqual(f["cases/0/summary"].shape[0], rows)

    def test_merge_refuses_bad_inputs_naming_the_files(self):
        junk = self.path("junk.h5")
        with open(junk, "w") as f:
            f.write("not a trace")
        first = os.path.join(self.dir, "case-0-of-4.h5")
        rc, out, err = run("merge", "-o", self.path("x.h5"), first, junk)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(junk, err)
        twin = self.path("twin.h5")
        shutil.copy(first, twin)
        rc, out, err = run("merge", "-o", self.path("x.h5"), first, twin)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(first, err)
        self.assertIn(twin, err)
        self.assertIn(key(*CASES[0]), err)
        rc, out, err = run("merge", "-o", first, first, os.path.join(self.dir, "case-1-of-4.h5"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn("also an input", err)
        self.assertFalse(os.path.exists(self.path("x.h5")))


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "models")
V1 = "cpu-f16-v1"  # no QK-norm, no bias: refused for qwen3 and qwen2, fine for llama


def result_of(path):
    with h5py.File(path, "r", swmr=True) as f:
        return json.loads(bytes(f["result"][:]).decode()), json.loads(f.attrs["run"]), f["summary"].shape[0]


class StoppedCases(TempDirCase):
    """Cases refused by the gate or stopped by bad input leave traces, merge, report and diff."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = cls.path("model.gguf")  # last night a llama, tonight a qwen3 (needs QK-norm)
        cls.missing = cls.path("no-such-model.gguf")
        matrix = ["--model", "synthetic:llama-tiny", "--model", cls.model, "--model", "synthetic:qwen3-tiny",
                  "--model", cls.missing, "--candidate", V1, "--prompt-tokens", "4"]
        shutil.copy(os.path.join(FIXTURES, "llama-tiny.gguf"), cls.model)
        cls.base_run = run("run", *matrix, "--trace-dir", cls.path("base"))
        shutil.copy(os.path.join(FIXTURES, "qwen3-tiny.gguf"), cls.model)
        cls.cur_run = run("run", *matrix, "--trace-dir", cls.path("cur"), "--json", cls.path("cur.json"))
        cls.base, cls.cur = cls.path("base.h5"), cls.path("cur.h5")
        cls.merges = [run("merge", "-o", out, *sorted(glob.glob(os.path.join(cls.path(d), "*.h5"))))
                      for out, d in ((cls.base, "base"), (cls.cur, "cur"))]

    def key(self, model):
        return f"{model} x {V1} x seed 0"

    def test_run_exits_with_the_worst_case_and_names_each_stop(self):
        rc, out, err = self.base_run
        self.assertEqual(rc, 3, out + err)
        rc, out, err = self.cur_run
        self.assertEqual(rc, 3, out + err)
        lines = out[out.index("Matrix summary"):].splitlines()
        verdicts = [next(l for l in lines if l.startswith(f"{k}/4 ")) for k in range(4)]
        self.assertIn("PASS", verdicts[0])
        for k in (1, 2):
            self.assertIn("REFUSED", verdicts[k])
            self.assertIn("capability gate", verdicts[k])
        self.assertIn("BAD-INPUT", verdicts[3])
        self.assertIn(self.missing, verdicts[3])
        with open(self.path("cur.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(all(c["trace"].endswith(f"case-{k}-of-4.h5") for k, c in enumerate(cases)))

    def test_stopped_cases_leave_traces_that_say_why(self):
        self.assertEqual(sorted(os.listdir(self.path("cur"))), [f"case-{k}-of-4.h5" for k in range(4)])
        res, run_json, rows = result_of(os.path.join(self.path("cur"), "case-2-of-4.h5"))
        self.assertEqual((res["status"], res["exit_code"], rows), ("refused", 3, 0))
        self.assertIn("Missing:          [QkNorm]", res["reason"])
        self.assertIn("QkNorm", res["ops"]["missing"])
        self.assertIn("QkNorm", run_json["model"]["required_ops"])
        self.assertEqual(run_json["candidate"]["name"], V1)
        self.assertEqual(run_json["case"]["index"], 2)
        res, run_json, rows = result_of(os.path.join(self.path("cur"), "case-3-of-4.h5"))
        self.assertEqual((res["status"], res["exit_code"], rows), ("bad-input", 2, 0))
        self.assertIn(self.missing, res["reason"])
        self.assertEqual(run_json["model_spec"], self.missing)
        res, _, rows = result_of(os.path.join(self.path("cur"), "case-0-of-4.h5"))
        self.assertEqual(res["status"], "ran")
        self.assertGreater(rows, 0)

    def test_merge_includes_and_marks_every_case(self):
        for rc, out, err in self.merges:
            self.assertEqual(rc, 0, out + err)
        with h5py.File(self.cur, "r") as f:
            index = f["case_index"][:]
            self.assertEqual([int(r["exit_code"]) for r in index], [0, 3, 3, 2])
            self.assertEqual([r["status"].decode() for r in index], ["ran", "refused", "refused", "bad-input"])
            self.assertTrue(index[1]["verdict"].decode().startswith("REFUSED"))
            self.assertTrue(index[3]["verdict"].decode().startswith("BAD-INPUT"))
            self.assertEqual(f["cases/2/summary"].shape[0], 0)

    def test_report_of_the_merged_file_lists_the_stops_and_exits_with_the_worst(self):
        rc, out, err = run("report", self.cur, "--junit", self.path("cur.xml"))
        self.assertEqual(rc, 3, out + err)
        self.assertEqual(out.count("=== case"), 4)
        self.assertIn("Missing:          [QkNorm]", out)
        lines = out[out.index("Matrix summary"):].splitlines()
        self.assertIn("REFUSED", next(l for l in lines if l.startswith("2/4 ")))
        bad = next(l for l in lines if l.startswith("3/4 "))
        self.assertIn("BAD-INPUT", bad)
        self.assertIn(self.missing, bad)
        self.assertIn("exit code 3", out)
        suites = ET.parse(self.path("cur.xml")).getroot().findall("testsuite")
        self.assertEqual(len(suites), 4)
        # Bad input alone (no refusal) is exit 2.
        only_bad = self.path("only_bad.h5")
        rc, out, err = run("merge", "-o", only_bad, *[os.path.join(self.path("cur"), f"case-{k}-of-4.h5")
                                                        for k in (0, 3)])
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run("report", only_bad)
        self.assertEqual(rc, 2, out + err)

    def test_report_of_a_single_stub_prints_the_reason_and_exits_with_its_code(self):
        rc, out, err = run("report", os.path.join(self.path("cur"), "case-2-of-4.h5"))
        self.assertEqual(rc, 3, out + err)
        self.assertIn("REFUSED (exit 3)", out)
        self.assertIn("Missing:          [QkNorm]", out)
        rc, out, err = run("report", os.path.join(self.path("cur"), "case-3-of-4.h5"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn(self.missing, out)

    def test_diff_names_a_case_that_ran_and_is_now_refused(self):
        rc, out, err = run("diff", self.base, self.cur)
        self.assertEqual(rc, 1, out + err)
        line = next(l for l in out.splitlines() if l.startswith("case-stopped "))
        self.assertIn(self.key(self.model), line)
        self.assertIn("REFUSED", line)
        self.assertIn("Missing:          [QkNorm]", out)
        # Cases refused or bad on both nights are not regressions.
        self.assertIn(f"case-still-stopped {self.key('synthetic:qwen3-tiny')}", out)
        self.assertIn("1 case(s) regressed", out)
        self.assertIn("REGRESSED", out)
        rc, out, err = run("diff", self.cur, self.base)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(f"case-now-runs      {self.key(self.model)}", out)
        # Two single traces: the same rule.
        rc, out, err = run("diff", os.path.join(self.path("base"), "case-1-of-4.h5"),
                           os.path.join(self.path("cur"), "case-1-of-4.h5"))
        self.assertEqual(rc, 1, out + err)
        self.assertIn("case-stopped", out)


class MatrixErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_bad_case_does_not_stop_the_others(self):
        missing = os.path.join(self.tmp.name, "no-such-model.gguf")
        d = os.path.join(self.tmp.name, "t")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--model", missing, "--candidate", "cpu-f16",
                           "--prompt-tokens", "4", "--trace-dir", d)
        self.assertEqual(rc, 2, out + err)
        summary = out[out.index("Matrix summary"):]
        good = next(l for l in summary.splitlines() if l.startswith("0/2 "))
        bad = next(l for l in summary.splitlines() if l.startswith("1/2 "))
        self.assertIn("PASS", good)
        self.assertIn("BAD-INPUT", bad)
        self.assertIn(missing, bad)
        # The bad case left a stub trace that says why, so merge and report still see it.
        self.assertEqual(sorted(os.listdir(d)), ["case-0-of-2.h5", "case-1-of-2.h5"])
        with h5py.File(os.path.join(d, "case-1-of-2.h5"), "r", swmr=True) as f:
            self.assertEqual(json.loads(bytes(f["result"][:]).decode())["status"], "bad-input")

    def test_malformed_or_empty_shards(self):
        for spec in ("2/2", "3/2", "a/b", "1/0"):
            rc, out, err = run("run", "--candidate", "cpu-f16", "--prompt-tokens", "4", "--shard", spec)
            self.assertEqual(rc, 2, f"{spec}: {out}{err}")
            self.assertIn(f"--shard {spec}", err)
        rc, out, err = run("run", "--seed", "0", "--seed", "1", "--prompt-tokens", "4", "--shard", "5/8")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("selects no case", out)

    def test_trace_with_a_matrix_is_a_usage_error(self):
        rc, out, err = run("run", "--seed", "0", "--seed", "1", "--trace", os.path.join(self.tmp.name, "x.h5"))
        self.assertEqual(rc, 2, out + err)
        self.assertIn("--trace-dir", err)


# Every variable --shard auto reads, so that a test run inside a real Slurm or GitLab job is not
# steered by the job's own.
SCHEDULER_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX",
                  "SLURM_ARRAY_TASK_STEP", "SLURM_JOB_ID", "JOB_COMPLETION_INDEX", "CI_NODE_INDEX", "CI_NODE_TOTAL")


def run_under(scheduler_env, *args):
    env = {k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}
    env.update(scheduler_env)
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240, env=env)
    return p.returncode, p.stdout, p.stderr


class AutoShards(unittest.TestCase):
    """--shard auto as a scheduler starts it: each task finds its share, and the shares are the matrix."""
    SEEDS = ["--candidate", "cpu-f16", "--seed", "0", "--seed", "1", "--seed", "2", "--prompt-tokens", "4"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def shards_in(self, d):
        out = {}
        for name in sorted(os.listdir(d)):
            with h5py.File(os.path.join(d, name), "r", swmr=True) as f:
                case = json.loads(f.attrs["run"])["case"]
            out[case["index"]] = case["shard"]
        return out

    def test_a_slurm_array_from_one_covers_the_matrix(self):
        d = os.path.join(self.tmp.name, "t")
        for task in (1, 2):  # sbatch --array=1-2
            rc, out, err = run_under({"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": "2",
                                      "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "2"},
                                     "run", *self.SEEDS, "--shard", "auto", "--trace-dir", d)
            self.assertEqual(rc, 0, out + err)
            self.assertIn(f"--shard auto: shard {task - 1}/2 from the Slurm job array (SLURM_ARRAY_TASK_ID={task}",
                          out)
        # Round-robin over 2 shards: cases 0 and 2 in shard 0/2, case 1 in 1/2, each recorded.
        self.assertEqual(self.shards_in(d), {0: "0/2", 1: "1/2", 2: "0/2"})

    def test_kubernetes_and_gitlab_indices(self):
        d = os.path.join(self.tmp.name, "k")
        rc, out, err = run_under({"JOB_COMPLETION_INDEX": "2"}, "run", *self.SEEDS, "--shard", "auto/3",
                                 "--trace-dir", d)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("shard 2/3 from the Kubernetes Indexed Job (JOB_COMPLETION_INDEX=2)", out)
        self.assertEqual(self.shards_in(d), {2: "2/3"})
        d = os.path.join(self.tmp.name, "g")
        rc, out, err = run_under({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"}, "run", *self.SEEDS, "--shard", "auto",
                                 "--trace-dir", d)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("shard 0/3 from the GitLab parallel job", out)
        self.assertEqual(self.shards_in(d), {0: "0/3"})

    def test_refusals_name_the_variables(self):
        d = os.path.join(self.tmp.name, "r")
        for env, spec, words in [
                ({}, "auto", ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "CI_NODE_INDEX", "--shard i/N"]),
                ({"JOB_COMPLETION_INDEX": "1"}, "auto", ["JOB_COMPLETION_INDEX=1", "auto/N"]),
                ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "3"}, "auto", ["CI_NODE_INDEX=4", "CI_NODE_TOTAL=3"]),
                ({"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "CI_NODE_INDEX": "1",
                  "CI_NODE_TOTAL": "2"}, "auto", ["several schedulers"])]:
            rc, out, err = run_under(env, "run", *self.SEEDS, "--shard", spec, "--trace-dir", d)
            self.assertEqual(rc, 2, f"{env}: {out}{err}")
            for w in words:
                self.assertIn(w, err)
            self.assertFalse(os.path.exists(d) and os.listdir(d), "a refused shard runs no case")


if __name__ == "__main__":
    unittest.main()
