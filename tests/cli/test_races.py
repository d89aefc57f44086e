"""Races as findings through the real CLI: the SIMT flags, `--race-check` and `--simt-racecheck`
on the race mutants, and the `race` status in the trace, the reports, `report`, `diff` and `replay`."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
RACE = 8  # the `race` status code in /summary (docs/trace-format.md)
MUTANT = ["--model", "synthetic:llama-tiny", "--candidate", "mutant:reduce-no-barrier", "--layers", "1",
          "--prompt-tokens", "4"]


def run(*args, cwd=None):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def run_attrs(trace):
    with h5py.File(trace, "r") as f:
        raw = f.attrs["run"]
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw)


def race_rows(trace):
    with h5py.File(trace, "r") as f:
        return [(int(r["step"]), int(r["layer"]), r["stage"].decode()) for r in f["summary"][:]
                if int(r["status"]) == RACE]


class Races(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_bad_simt_values_exit_2_naming_the_option(self):
        for flag, value in (("--simt-order", "sideways"), ("--simt-order", "random:x"),
                            ("--simt-order", "random:-1"), ("--simt-threads", "0"),
                            ("--simt-threads", "many"), ("--race-check", "-1"), ("--race-check", "65")):
            rc, out, err = run("run", flag, value)
            self.assertEqual(rc, 2, f"{flag} {value}: {out}{err}")
            self.assertIn(flag, out + err, f"{flag} {value}")

    def test_simt_settings_are_recorded_and_a_correct_kernel_passes_under_them(self):
        trace = self.path("ok.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "simt", "--layers", "1",
                           "--simt-order", "random:7", "--simt-threads", "2", "--simt-strict",
                           "--race-check", "2", "--trace", trace)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(run_attrs(trace)["simt"],
                         {"order": "random:7", "threads": 2, "strict": True, "race_check": 2,
                          "racecheck": False, "memcheck": False})
        self.assertEqual(race_rows(trace), [])

    def test_default_simt_threads_are_every_core_for_simt_and_one_for_the_others(self):
        # simt's own kernels never race between blocks: every core DRIFTSCOPE_THREADS allows, as
        # cpu-f16's loops. A mutant (or a plugin, a bare .cu) and any run under a checker: one host
        # thread, where a kernel whose blocks race stays reproducible (docs/cli.md).
        cases = [  # (candidate, extra flags, DRIFTSCOPE_THREADS, the threads the trace records)
            ("simt", [], None, os.cpu_count()),
            ("simt", [], "3", 3),
            ("simt-gdn", [], "3", 3),
            ("simt", ["--simt-threads", "1"], "3", 1),
            ("simt", ["--race-check", "1"], "3", 1),
            ("mutant:chain-add-rz", [], "3", 1),
        ]
        for candidate, extra, threads, want in cases:
            with self.subTest(candidate=candidate, extra=extra, threads=threads):
                trace = self.path("default.h5")
                env = dict(os.environ)
                env.pop("DRIFTSCOPE_THREADS", None)
                if threads:
                    env["DRIFTSCOPE_THREADS"] = threads
                p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:qwen2-tiny", "--candidate", candidate,
                                    "--layers", "1", "--trace", trace, *extra], capture_output=True, text=True,
                                   timeout=240, env=env)
                self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
                self.assertEqual(run_attrs(trace)["simt"]["threads"], want)

    def test_race_check_reports_the_missing_barrier_everywhere_a_status_appears(self):
        trace, js, junit, md = (self.path(n) for n in ("race.h5", "r.json", "r.xml", "r.md"))
        rc, out, err = run("run", *MUTANT, "--race-check", "2", "--trace", trace, "--json", js,
                           "--junit", junit, "--markdown", md)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("RACE", out)
        self.assertIn("race in launch 0 of step attention: dsk_simt::mutant_reduce_no_barrier::attention_kernel", out)
        self.assertIn("output differs between schedules forward and reverse", out)
        self.assertIn((0, 0, "attn"), race_rows(trace))
        with open(js) as f:
            rows = [s for s in json.load(f)["stages"] if s["status"] == "race"]
        self.assertTrue(rows and rows[0]["stage"] == "attn" and rows[0]["failure"], rows)
        with open(junit) as f:
            self.assertIn('type="race"', f.read())
        with open(md) as f:
            self.assertIn("race", f.read())
        # Re-judged from the trace, the race stays a race: `report` fails it.
        rc, out, err = run("report", trace)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("RACE", out)
        # Against a clean trace, `diff` calls it a regression.
        clean = self.path("clean.h5")
        rc, out, err = run("run", *MUTANT[:2], "--candidate", "simt", "--layers", "1", "--prompt-tokens", "4",
                           "--trace", clean)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run("diff", clean, trace)
        self.assertNotEqual(rc, 0, out + err)
        self.assertIn("now race", out)
        # The replayed step races again when asked to look.
        rc, out, err = run("replay", trace, "--step", "0", "--layer", "0", "--stage", "attn", "--race-check", "1")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("race in launch 0 of step attention", out)

    def test_hazard_checker_names_the_write_after_read_by_file_and_line(self):
        rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", "mutant:reduce-war",
                           "--layers", "1", "--prompt-tokens", "4", "--simt-racecheck", "--json",
                           self.path("war.json"), cwd=self.tmp.name)
        if "--simt-racecheck:" in err:
            self.skipTest(err.strip())
        self.assertEqual(rc, 1, out + err)
        with open(self.path("war.json")) as f:
            race = [s for s in json.load(f)["stages"] if s["status"] == "race"]
        self.assertTrue(race, out)
        self.assertEqual((race[0]["step"], race[0]["layer"], race[0]["stage"]), (0, 0, "attn"))
        self.assertIn("WAR hazard on dynamic shared memory", race[0]["note"])
        # The mutant's own source (reduce_war.cu, generated from kernels/mutants/reduce_war.patch) holds
        # its kernel, which calls its reduction.
        self.assertIn("reduce_war.cu:", race[0]["note"])


if __name__ == "__main__":
    unittest.main()
