"""`driftscope diff` for a pull request: a planted regression named first (console and --json), one
line per stage, and the JUnit and Markdown files a CI system posts."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


def cells(row):
    """A Markdown table row's cells, split on the pipes that are not escaped."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip()[1:-1])]


def trace_of(path, candidate):
    rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", candidate, "--mode", "both",
                       "--trace", path)
    return rc, out + err


class PlantedRegression(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.base, cls.current = cls.path("base.h5"), cls.path("current.h5")
        rc, out = trace_of(cls.base, "cpu-f16")
        assert rc == 0, out
        rc, out = trace_of(cls.current, "mutant:chain-add-idx")
        assert rc == 1, out
        cls.rc, cls.out, cls.err = run("diff", cls.base, cls.current, "--json", cls.path("d.json"), "--junit",
                                       cls.path("d.xml"), "--markdown", cls.path("d.md"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)

    def test_exit_1_and_verdict(self):
        self.assertEqual(self.rc, 1, self.out + self.err)
        self.assertEqual(self.out.splitlines()[-1], "REGRESSED")

    def test_json_names_the_planted_regression_first(self):
        with open(self.path("d.json")) as f:
            doc = json.load(f)
        self.assertTrue(doc["regressed"])
        self.assertEqual(doc["verdict"], "REGRESSED")
        for where, entry in (("first_regression", doc["first_regression"]),
                             ("cases[0].changes[0]", doc["cases"][0]["changes"][0])):
            with self.subTest(where=where):
                self.assertEqual((entry["step"], entry["layer"], entry["stage"]), (0, 0, "residual_1"), entry)
                self.assertTrue(entry["regression"])
                self.assertFalse(entry["inherited"])
                self.assertEqual(entry["change"], "new-failure")
                self.assertIn("isolated", entry["modes"])
                self.assertIn("now fail", entry["evidence"])
                self.assertIn("max |diff|", entry["evidence"])  # the why, not an empty note

    def test_console_names_it_in_its_first_lines(self):
        lines = self.out.splitlines()
        # Only the warning that the two runs are of different candidates may come before it.
        self.assertTrue(lines[0].startswith("warning: the traces are runs of different keys"), self.out)
        self.assertRegex(lines[1], r"^  candidate +baseline cpu-f16 +current mutant:chain-add-idx$")
        first = lines[2]
        self.assertTrue(first.startswith("First regression: step 0 layer 0 residual_1 (isolated, chained): "
                                         "new-failure: was pass, now fail: "), self.out)
        self.assertIn("max |diff|", first)
        self.assertRegex(lines[3], r"^new-failure +step +0 +L0 residual_1 +isolated,chained ")

    def test_one_line_per_stage(self):
        stage_lines = [l.split()[:5] for l in self.out.splitlines() if l.split()[:1] and
                       l.split()[0] in ("new-failure", "new-nan", "error-grew", "disappeared")]
        keys = [tuple(l[1:5]) for l in stage_lines]  # ("step", N, layer, stage)
        self.assertEqual(len(keys), len(set(keys)), self.out)
        self.assertGreater(len(keys), 1, self.out)
        # Stages downstream in chained mode only say where their drift came from.
        self.assertIn("[inherited", self.out)
        summary = next(l for l in self.out.splitlines() if "stages matched" in l)
        self.assertIn(f"{len(keys)} stage(s) regressed", summary)

    def test_junit_fails_the_case_and_each_regressed_stage(self):
        root = ET.parse(self.path("d.xml")).getroot()
        cases = root.findall(".//testcase")
        failed = [c for c in cases if c.find("failure") is not None]
        self.assertEqual(int(root.get("failures")), len(failed))
        self.assertEqual(int(root.get("tests")), len(cases))
        self.assertIn("first regression: step 0 layer 0 residual_1", failed[0].find("failure").get("message"))
        self.assertEqual(failed[1].get("name"), "residual_1")
        self.assertEqual(failed[1].get("classname"), "driftscope.diff.step0.layer0")

    def test_markdown_leads_with_it_and_fills_its_note(self):
        with open(self.path("d.md")) as f:
            md = f.read()
        self.assertIn("**REGRESSED**", md)
        self.assertIn("First regression: **step 0 layer 0 residual_1 (isolated", md)
        row = next(l for l in md.splitlines() if l.startswith("| 0 | 0 | `residual_1` |"))
        row_cells = cells(row)
        # The note's own "|diff|" is escaped, so the row keeps its 7 cells.
        self.assertEqual(len(row_cells), 7, row)
        self.assertIn("now fail", row_cells[6])
        self.assertIn("max \\|diff\\|", row_cells[6])

    def test_a_clean_diff_writes_clean_files(self):
        rc, out, err = run("diff", self.base, self.base, "--json", self.path("c.json"), "--markdown",
                           self.path("c.md"), "--junit", self.path("c.xml"))
        self.assertEqual(rc, 0, out + err)
        with open(self.path("c.json")) as f:
            doc = json.load(f)
        self.assertFalse(doc["regressed"])
        self.assertIsNone(doc["first_regression"])
        self.assertEqual(doc["cases"][0]["changes"], [])
        self.assertEqual(ET.parse(self.path("c.xml")).getroot().get("failures"), "0")
        with open(self.path("c.md")) as f:
            self.assertIn("**NO REGRESSION**", f.read())

    def test_an_unwritable_report_file_is_exit_2_naming_it(self):
        bad = os.path.join(self.tmp.name, "no-such-dir", "d.json")
        rc, out, err = run("diff", self.base, self.current, "--json", bad)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(bad, err)


class RunMarkdownNotes(unittest.TestCase):
    def test_the_culprit_row_of_a_run_report_has_its_note(self):
        with tempfile.TemporaryDirectory() as tmp:
            md = os.path.join(tmp, "r.md")
            rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx",
                               "--markdown", md)
            self.assertEqual(rc, 1, out + err)
            with open(md) as f:
                rows = [l for l in f.read().splitlines() if l.startswith("| 0 | 0 | `residual_1`")]
            self.assertTrue(rows, out)
            row_cells = cells(rows[0])
            self.assertEqual(len(row_cells), 9, rows[0])
            note = row_cells[8]
            self.assertTrue(note, rows[0])
            self.assertIn("max \\|diff\\|", note)


if __name__ == "__main__":
    unittest.main()
