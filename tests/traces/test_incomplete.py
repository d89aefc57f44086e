"""A trace whose run did not finish (no /result) is INCOMPLETE everywhere a verdict is given:
`report` (console, --json, --junit, --markdown) and `diff` exit 1 and name the last stage flushed,
for a single trace and for the same run inside a merged file. The flushed stages all pass here, so
only the missing result can make the verdict a failure.

The kill is deterministic: DRIFTSCOPE_TEST_KILL_AFTER_LAYERS=N raises SIGKILL after N flushed layers."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import h5py

DS = sys.argv.pop(1)


def ds(*args, env=None):
    p = subprocess.run([DS, *args], capture_output=True, text=True, timeout=240, env=env)
    return p.returncode, p.stdout, p.stderr


class Incomplete(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ds_incomplete_")
        cls.full = os.path.join(cls.tmp.name, "full.h5")
        cls.killed = os.path.join(cls.tmp.name, "killed.h5")
        common = ["run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--prompt-tokens", "4"]
        rc, out, err = ds(*common, "-o", cls.full)
        assert rc == 0, out + err
        env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS="1")
        rc, out, err = ds(*common, "-o", cls.killed, env=env)
        assert rc == -9, (rc, out, err)
        with h5py.File(cls.killed, "r", swmr=True) as f:
            assert f["result"].shape[0] == 0
            rows = f["summary"][:]
            assert all(int(r["status"]) == 0 for r in rows), "every flushed stage passes"
            cls.rows = len(rows)
            last = rows[-1]
            cls.last = (int(last["step"]), int(last["layer"]), last["stage"].decode())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def last_stage_words(self):
        step, layer, stage = self.last
        return f"the last {stage} of layer {layer} at step {step}"

    def test_report_console_json_junit_markdown_say_incomplete_and_exit_1(self):
        js, xml, md = self.path("r.json"), self.path("r.xml"), self.path("r.md")
        rc, out, err = ds("report", self.killed, "--json", js, "--junit", xml, "--markdown", md)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("INCOMPLETE: the run did not finish", out)
        self.assertIn(f"{self.rows} stage row(s) were flushed", out)
        self.assertIn(self.last_stage_words(), out)
        self.assertNotIn("\nPASS", out)

        with open(js) as f:
            j = json.load(f)
        self.assertEqual(j["exit_code"], 1)
        self.assertTrue(j["verdict"].startswith("INCOMPLETE"), j["verdict"])
        self.assertEqual(j["incomplete"]["rows_flushed"], self.rows)
        last = j["incomplete"]["last_stage_flushed"]
        self.assertEqual((last["step"], last["layer"], last["stage"]), self.last)

        suites = ET.parse(xml).getroot()
        self.assertEqual(suites.get("failures"), "1")
        self.assertEqual(suites.get("tests"), str(self.rows + 1))
        failure = suites.find("testsuite/testcase[@name='run-finished']/failure")
        self.assertIsNotNone(failure)
        self.assertEqual(failure.get("type"), "INCOMPLETE")
        self.assertIn(self.last[2], failure.get("message"))

        with open(md) as f:
            self.assertIn("**INCOMPLETE**", f.read())

    def test_a_finished_trace_of_the_same_run_still_passes(self):
        js = self.path("full.json")
        rc, out, err = ds("report", self.full, "--json", js)
        self.assertEqual(rc, 0, out + err)
        with open(js) as f:
            self.assertIsNone(json.load(f)["incomplete"])

    def test_diff_against_an_incomplete_current_trace_regresses(self):
        for base in (self.full, self.killed):  # even a baseline killed at the same point
            rc, out, err = ds("diff", base, self.killed)
            self.assertEqual(rc, 1, out + err)
            self.assertIn("INCOMPLETE: current trace", out)
            self.assertIn(self.last_stage_words(), out)
            self.assertIn("REGRESSED", out)
        rc, out, err = ds("diff", self.killed, self.full)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("note: baseline INCOMPLETE", out)

    def test_merged_file_applies_the_same_rule(self):
        # A second, finished case beside the killed one (another seed, so the keys differ).
        other = self.path("seed1.h5")
        rc, out, err = ds("run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--prompt-tokens", "4",
                          "--seed", "1", "-o", other)
        self.assertEqual(rc, 0, out + err)
        merged, js, xml = self.path("merged.h5"), self.path("m.json"), self.path("m.xml")
        rc, out, err = ds("merge", "-o", merged, self.killed, other)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("INCOMPLETE", out)
        rc, out, err = ds("report", merged, "--json", js, "--junit", xml)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("INCOMPLETE", out)
        self.assertIn(self.last_stage_words(), out)
        with open(js) as f:
            cases = {c["case"]["seed"]: c for c in json.load(f)["cases"]}
        self.assertEqual(cases[0]["verdict"], "INCOMPLETE")
        self.assertEqual(cases[0]["exit_code"], 1)
        self.assertEqual(cases[0]["report"]["incomplete"]["last_stage_flushed"]["stage"], self.last[2])
        self.assertEqual(cases[1]["verdict"], "PASS")
        suites = ET.parse(xml).getroot()
        failures = suites.findall(".//failure[@type='INCOMPLETE']")
        self.assertEqual(len(failures), 1)
        self.assertEqual(suites.get("failures"), "1")


if __name__ == "__main__":
    unittest.main(verbosity=2)
