"""Verdicts that agree with their tables, and output that leads with the cause, read from the real
CLI as a new user runs it: an isolated-only run says drift was NOT checked (console, JSON, JUnit);
a policy rule selecting no stage is exit 2 with a suggestion; notes print the numbers they divide;
exit codes stay 0-4; non-finite hyper-parameters are refused; the first failing stage comes within
the first 10 lines, inherited rows one line per layer; mistyped names get a suggestion and no-op
flags are refused. (Filled rows counted, not listed: tests/harness/test_console.cpp, which needs no
partial plugin.)"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures")
MUTANT = ("run", "--model", "synthetic:qwen2-tiny", "--candidate", "mutant:chain-add-idx")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout, p.stderr


class Verdicts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.iso_trace = cls.path("iso.h5")
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--trace",
                           cls.iso_trace, "--json", cls.path("iso.json"), "--junit", cls.path("iso.xml"))
        assert rc == 0, out + err
        cls.iso_out = out
        rc, out, err = run(*MUTANT, "--mode", "both")
        assert rc == 1, out + err
        cls.mutant_out = out

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp.name, name)

    # ---- drift not checked ----

    def test_an_isolated_only_run_says_drift_was_not_checked_everywhere(self):
        self.assertIn("drift across layers was NOT checked", self.iso_out)
        self.assertNotIn("No drift", self.iso_out)
        verdict = self.iso_out.strip().splitlines()[-2]  # the last line is the trace's path
        self.assertTrue(verdict.startswith("PASS"), self.iso_out)
        self.assertIn("NOT checked", verdict)
        with open(self.path("iso.json")) as f:
            j = json.load(f)
        self.assertEqual(j["drift"]["checked"], False)
        self.assertIsNone(j["drift"]["start_layer"])
        self.assertIn("NOT checked", j["drift"]["text"])
        case = ET.parse(self.path("iso.xml")).getroot().find(".//testcase[@name='no-drift']")
        self.assertIsNotNone(case)
        self.assertIsNotNone(case.find("skipped"))
        self.assertIn("NOT checked", case.find("skipped").get("message"))
        rc, out, err = run("report", self.iso_trace)  # re-judged, the same words
        self.assertEqual(rc, 0, out + err)
        self.assertIn("NOT checked", out)

    def test_a_chained_run_checks_drift(self):
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--mode", "both",
                           "--json", self.path("both.json"), "--junit", self.path("both.xml"))
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("NOT checked", out)
        with open(self.path("both.json")) as f:
            self.assertEqual(json.load(f)["drift"]["checked"], True)
        case = ET.parse(self.path("both.xml")).getroot().find(".//testcase[@name='no-drift']")
        self.assertIsNotNone(case)
        self.assertIsNone(case.find("skipped"))
        self.assertIsNone(case.find("failure"))

    # ---- policy rules that select nothing ----

    def test_a_policy_rule_selecting_no_stage_is_exit_2_naming_it(self):
        cases = {
            "typo": ('  - stage: "atn_norm"\n    bit_exact: true\n', "did you mean 'attn_norm'?"),
            "no_family_has_it": ('  - stage: "qkv_norm"\n    bit_exact: true\n', "nor of any other model family"),
        }
        for name, (rule, expect) in cases.items():
            with self.subTest(name):
                policy = self.path(f"{name}.yaml")
                with open(policy, "w") as f:
                    f.write("name: p\nrules:\n" + rule + '  - stage: ".*"\n    dtype_defaults: true\n')
                rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--policy",
                                   policy)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(f"{policy}:3", err)  # the rule's file and line
                self.assertIn(expect, err)
                self.assertNotIn("PASS", out)
                rc, out, err = run("report", self.iso_trace, "--policy", policy)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(expect, err)

    # ---- notes print the numbers they divide ----

    def test_statistical_limit_notes_divide_the_numbers_they_print(self):
        rc, out, err = run(*MUTANT, "--all")
        self.assertEqual(rc, 1, out + err)
        notes = re.findall(r"rms ([0-9.e+-]+) is ([0-9.e+-]+)x the [a-z0-9 ]*floor's rms ([0-9.e+-]+)", out)
        self.assertTrue(notes, out)
        for rms, ratio, floor in notes:
            self.assertAlmostEqual(float(ratio), float(rms) / float(floor), delta=0.02 * float(ratio) + 0.06)

    # ---- exit codes 0-4 ----

    def rewrite_result(self, name, **fields):
        path = self.path(name)
        shutil.copy(self.iso_trace, path)
        with h5py.File(path, "r+") as f:
            result = json.loads(bytes(f["result"][()]).decode())
            result.update(fields)
            data = np.frombuffer(json.dumps(result).encode(), dtype=np.uint8)
            del f["result"]
            f.create_dataset("result", data=data, maxshape=(None,), chunks=True)
        return path

    def test_report_exits_0_to_4_whatever_the_trace_stored(self):
        cases = {
            "exit_255": dict(exit_code=255),
            "exit_7_refused": dict(exit_code=7, status="refused", reason="x"),
            "exit_string": dict(exit_code="1"),
            "refused_stored_as_pass": dict(exit_code=0, status="refused", reason="x"),
            "unknown_status": dict(exit_code=2, status="exploded", reason="x"),
        }
        for name, fields in cases.items():
            with self.subTest(name):
                rc, out, err = run("report", self.rewrite_result(name + ".h5", **fields))
                self.assertEqual(rc, 2, out + err)
                self.assertIn("corrupt trace", err)

    def patched_gguf(self, name, key, value):
        with open(os.path.join(FIXTURES, "models", "qwen2-tiny.gguf"), "rb") as f:
            b = bytearray(f.read())
        i = b.find(key.encode())
        self.assertGreater(i, 0, key)
        j = i + len(key)
        kind = struct.unpack_from("<I", b, j)[0]
        struct.pack_into("<f" if kind == 6 else "<d", b, j + 4, value)
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(b)
        return path

    def test_non_finite_hyper_parameters_are_refused_naming_the_key(self):
        cases = {
            "eps_inf": ("qwen2.attention.layer_norm_rms_epsilon", float("inf")),
            "eps_nan": ("qwen2.attention.layer_norm_rms_epsilon", float("nan")),
            "rope_base_inf": ("qwen2.rope.freq_base", float("inf")),
        }
        for name, (key, value) in cases.items():
            with self.subTest(name):
                model = self.patched_gguf(name + ".gguf", key, value)
                for candidate in ("cpu-f16", "mutant:chain-add-idx"):
                    rc, out, err = run("run", "--model", model, "--candidate", candidate)
                    self.assertEqual(rc, 2, out + err)
                    self.assertIn(key, err)
                    self.assertIn("finite", err)
        hf = self.path("hf-eps")
        shutil.copytree(os.path.join(FIXTURES, "models", "qwen2-tiny"), hf)
        with open(os.path.join(hf, "config.json")) as f:
            text = f.read()
        with open(os.path.join(hf, "config.json"), "w") as f:
            f.write(re.sub(r'"rms_norm_eps":\s*[0-9.e+-]+', '"rms_norm_eps": 1e999', text))
        rc, out, err = run("run", "--model", hf, "--candidate", "cpu-f16")
        self.assertEqual(rc, 2, out + err)  # JSON has no Inf: 1e999 is refused as it is read
        self.assertIn("config.json", err)

    # ---- the console leads with the cause ----

    def test_the_mutant_run_leads_with_its_first_failing_stage(self):
        lines = self.mutant_out.splitlines()
        first = next(i for i, l in enumerate(lines) if l.startswith("First failing stage:"))
        self.assertLess(first, 10, self.mutant_out)
        self.assertIn("residual_1 of layer 0 at step 0 (isolated mode)", lines[first])
        self.assertTrue(lines[first + 1].strip().startswith("why:"), self.mutant_out)
        self.assertIn("first mismatch at flat index", lines[first + 2])
        self.assertTrue(lines[first + 3].strip().startswith("ref["), self.mutant_out)
        # Inherited rows: one line per layer (2 layers and the model-level stages), not one per stage.
        inherited = [l for l in lines if "chained row(s) inherited" in l]
        self.assertEqual(len(inherited), 3, self.mutant_out)
        # Passing rows are listed only as the lead-up to the first failure (its block's stages before
        # it); the rest of the output stays short.
        leading = [l for l in lines if " PASS " in l]
        self.assertEqual([l.split()[:3] for l in leading],
                         [["0", "0", s] for s in ["attn_norm", "q", "k", "v", "q_rope", "k_rope", "attn", "attn_out"]],
                         self.mutant_out)
        self.assertLess(len(lines) - len(leading), 45, self.mutant_out)
        self.assertNotIn("-1 (0 of", self.mutant_out)
        rc, out, err = run(*MUTANT, "--mode", "both", "--all")
        self.assertEqual(rc, 1, out + err)
        self.assertNotIn("chained row(s) inherited", out)
        self.assertGreater(len([l for l in out.splitlines() if " chained  FAIL" in l]), 10, out)

    def test_a_failing_row_shows_an_element_that_differs(self):
        # Layer 1's isolated residual_1 fails the statistical limit with every element in the band.
        rows = [l for l in self.mutant_out.splitlines() if re.match(r"\s+0\s+1\s+residual_1\s+isolated\s+FAIL", l)]
        self.assertEqual(len(rows), 1, self.mutant_out)
        self.assertRegex(rows[0], r"none outside; max at \d+ \(0 of 256\)")

    def test_a_passing_run_heads_its_closest_row(self):
        lines = self.iso_out.splitlines()
        at = next(i for i, l in enumerate(lines) if "Closest to its tolerance" in l)
        self.assertRegex(lines[at + 1], r"^\s*step\s+layer\s+stage\s+mode\s+status")

    def test_the_header_states_layers_run_of_total(self):
        rc, out, err = run("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--layers", "1")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("1 of 2 layers (--layers 1)", out.splitlines()[0])
        self.assertIn("all 2 layers", self.iso_out.splitlines()[0])

    # ---- names and no-op flags ----

    def test_mistyped_names_get_a_suggestion(self):
        cases = {
            "candidate": (("run", "--model", "synthetic:qwen2-tiny", "--candidate", "simd"), "did you mean 'simt'?"),
            "probe": (("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--probe", "tiny-row"),
                      "did you mean 'tiny-rows'?"),
            "replay_stage": (("replay", self.iso_trace, "--step", "0", "--layer", "0", "--stage", "atn_norm"),
                             "did you mean 'attn_norm'?"),
            "capture_stages": (("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16",
                                "--capture-stages", "atn_norm"), "did you mean 'attn_norm'?"),
        }
        for name, (args, expect) in cases.items():
            with self.subTest(name):
                rc, out, err = run(*args)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(expect, out + err)

    def test_flags_that_would_do_nothing_are_refused(self):
        base = ("run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16")
        cases = {
            "empty_tokens": (("--tokens", ""), "--tokens"),
            "capture_layers_past_the_model": (("--capture-layers", "5:9"), "--capture-layers"),
            "capture_layers_past_layers_run": (("--layers", "1", "--capture-layers", "1"), "--capture-layers"),
            "empty_capture_layers": (("--capture-layers", ""), "--capture-layers"),
        }
        for name, (extra, expect) in cases.items():
            with self.subTest(name):
                rc, out, err = run(*base, *extra)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(expect, err)
                self.assertNotIn("PASS", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
