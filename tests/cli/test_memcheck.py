"""`run --simt-memcheck` through the real CLI: a plugin whose RMSNorm stores past its output at the
one-token decode step (memcheck_plugin/, built from the kernel's CHECKED flavour) exits 1 with the
stage `memory`, the finding naming the kernel's line, and the run reaching its report; the built-in
simt candidate's checked kernels pass under memcheck on every tiny preset (no false alarm).

Usage: test_memcheck.py DRIFTSCOPE PLUGIN.so UNCHECKED_PLUGIN.so (the same candidates on the kernel's
plain flavour)"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE, PLUGIN, UNCHECKED = sys.argv[1:4]
del sys.argv[1:4]
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memcheck_plugin", "flat_rmsnorm.cu")


def run(*args):
    p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=400)
    return p.returncode, p.stdout, p.stderr


def marker_line(path, marker):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError(f"{marker} not in {path}")


class Memcheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_unguarded_store_at_the_decode_step_is_a_memory_finding(self):
        js, junit = os.path.join(self.tmp.name, "r.json"), os.path.join(self.tmp.name, "r.xml")
        rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:flat-rmsnorm",
                           "--fill", "reference", "--layers", "1", "--prompt-tokens", "4", "--decode-steps", "1",
                           "--simt-memcheck", "--json", js, "--junit", junit)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("MEMORY", out)
        self.assertNotIn("signal", out + err)
        with open(js) as f:
            rows = [s for s in json.load(f)["stages"] if s["status"] == "memory"]
        self.assertTrue(rows, out)
        first = rows[0]
        # The prompt (4 tokens x 64) fills the one block exactly; the decode step (1 token) does not.
        self.assertEqual((first["step"], first["layer"], first["stage"]), (1, 0, "attn_norm"), first)
        note = first["note"]
        self.assertIn("memory error in launch 0 of step rmsnorm_attn", note)
        self.assertIn("flat_rmsnorm_kernel: out-of-bounds write of 4 bytes", note)
        self.assertIn("thread (64,0,0) of block (0,0,0)", note)
        self.assertIn("0 bytes past the end of a 256-byte block", note)
        self.assertIn(f"flat_rmsnorm.cu:{marker_line(KERNEL, '@flat:store')}", note)
        with open(junit) as f:
            self.assertIn('type="memory"', f.read())

    def test_check_and_verify_name_the_memory_error_first_and_blame_the_later_crashes_on_it(self):
        # Without memcheck the stray store corrupts the heap of the candidate's process, and glibc
        # aborts in whatever runs next (the fill's qkv): every other part of the battery crashes far
        # from the line. The memory part runs first, names the line, and each crash points at it.
        line = marker_line(KERNEL, "@flat:store")
        args = ["--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:flat-rmsnorm", "--fill", "reference",
                "--layers", "1", "--decode-steps", "1"]
        js = os.path.join(self.tmp.name, "check.json")
        rc, out, err = run("check", *args, "--json", js)
        self.assertIn(rc, (1, 4), out + err)
        with open(js) as f:
            parts = json.load(f)["parts"]
        self.assertEqual(parts[0]["name"], "memory errors")
        self.assertEqual(parts[0]["exit_code"], 1, parts[0])
        self.assertTrue(parts[0]["verdict"].startswith("attn_norm of layer 0, step 1 (isolated): memory error"),
                        parts[0]["verdict"])
        self.assertIn(f"flat_rmsnorm.cu:{line}", parts[0]["verdict"])
        self.assertIn("--simt-memcheck", parts[0]["command"])
        self.assertRegex(out, r"CHECK \w+: \d+ of \d+ parts did not pass \(first: memory errors: attn_norm of layer 0")
        # The store corrupts the heap of every later part's candidate process: some crash, far from it.
        self.assertTrue(any(p["exit_code"] == 4 for p in parts), parts)
        self.assertIn("cause: likely the memory error at attn_norm of layer 0, step 1 (isolated)", out)

        js = os.path.join(self.tmp.name, "verify.json")
        rc, out, err = run("verify", *args, "--json", js)
        self.assertIn(rc, (1, 4), out + err)
        with open(js) as f:
            findings = json.load(f)["findings"]
        self.assertEqual((findings[0]["kind"], findings[0]["stage"], findings[0]["step"]), ("memory", "attn_norm", 1),
                         findings)
        self.assertIn(f"flat_rmsnorm.cu:{line}", findings[0]["evidence"]["verdict"])
        crashes = [f for f in findings if f["kind"] == "crash"]
        self.assertTrue(crashes, findings)
        for crash in crashes:
            self.assertIn("memory error at attn_norm", crash["evidence"]["likely_cause"])

    def test_a_vector_load_past_an_odd_width_row_is_named_by_the_odd_widths_part(self):
        # vec4-rmsnorm reads each row as float4: right at the preset's widths (multiples of 8), so the
        # memory part and the parity parts pass; at the tails preset's odd widths its loads reach past
        # the row, which the odd-widths part (under memcheck) names at the load's line, and verify
        # reports as a memory finding.
        line = marker_line(KERNEL, "@vec4:load")
        args = ["--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:vec4-rmsnorm", "--fill", "reference",
                "--decode-steps", "1"]
        js = os.path.join(self.tmp.name, "check.json")
        rc, out, err = run("check", *args, "--json", js)
        self.assertEqual(rc, 1, out + err)
        with open(js) as f:
            parts = {p["name"]: p for p in json.load(f)["parts"]}
        self.assertEqual(parts["memory errors"]["exit_code"], 0, parts["memory errors"])
        self.assertEqual(parts["both modes"]["exit_code"], 0, parts["both modes"])
        tails = parts["odd widths"]
        self.assertEqual(tails["exit_code"], 1, tails)
        self.assertIn("--simt-memcheck", tails["command"])
        self.assertRegex(tails["verdict"], r"^attn_norm of layer 0, step 0 \(isolated\): memory error .*"
                         r"vec4_rmsnorm_kernel: (misaligned access|out-of-bounds read) of 16 bytes at ")
        self.assertIn(f"flat_rmsnorm.cu:{line}", tails["verdict"])

        js = os.path.join(self.tmp.name, "verify.json")
        rc, out, err = run("verify", *args, "--checks", "check", "--json", js)
        self.assertEqual(rc, 1, out + err)
        with open(js) as f:
            findings = json.load(f)["findings"]
        self.assertEqual([(f["kind"], f["stage"], f["evidence"]["part"]) for f in findings],
                         [("memory", "attn_norm", "odd widths")], findings)

    def test_memory_a_step_allocates_and_never_frees_is_a_leak_named_by_step_and_line(self):
        # leaky-rmsnorm copies its weight to a fresh device block at every call and never frees it:
        # 3 calls of each RMSNorm step (the prompt, 2 decode steps) leave 3 blocks of 64 floats each.
        line = marker_line(KERNEL, "@flat:weight-copy")
        args = ["run", "--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:leaky-rmsnorm", "--fill",
                "reference", "--layers", "1", "--prompt-tokens", "4", "--decode-steps", "2"]
        js = os.path.join(self.tmp.name, "leak.json")
        rc, out, err = run(*args, "--json", js)
        self.assertEqual(rc, 0, out + err)  # a warning by default
        for step in ("rmsnorm_attn", "rmsnorm_ffn"):
            self.assertIn(f"leak: 3 block(s), 768 bytes, allocated at {KERNEL}:{line} during the calls of step {step} "
                          "and not freed by the end of the run", out)
        with open(js) as f:
            leaks = json.load(f)["leaks"]
        self.assertEqual(sorted((l["kernel_step"], l["blocks"], l["bytes"]) for l in leaks),
                         [("rmsnorm_attn", 3, 768), ("rmsnorm_ffn", 3, 768)])

        junit = os.path.join(self.tmp.name, "leak.xml")
        rc, out, err = run(*args, "--fail-on-leak", "--junit", junit)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("FAIL: 6 block(s) of device memory (1536 bytes) allocated during steps were never freed", out)
        with open(junit) as f:
            self.assertIn('<failure type="leak"', f.read())

        # The same kernel freeing its copy (flat-rmsnorm, whose only bug is its unguarded store, at
        # the prompt step where the grid fits) leaks nothing.
        rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:flat-rmsnorm", "--fill",
                           "reference", "--layers", "1", "--prompt-tokens", "4", "--decode-steps", "0",
                           "--fail-on-leak")
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("leak:", out)

    def test_a_benign_same_value_race_is_a_note_on_its_stage_not_a_failure(self):
        # row-rmsnorm's threads all store the row's 1/rms to one shared float: a write-write race of
        # the same value, which the hazard checker classes benign (docs/simt.md: severity).
        js = os.path.join(self.tmp.name, "benign.json")
        rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", f"{PLUGIN}:row-rmsnorm", "--fill",
                           "reference", "--layers", "1", "--prompt-tokens", "4", "--decode-steps", "1", "--mode",
                           "isolated", "--simt-racecheck", "--json", js)
        self.assertEqual(rc, 0, out + err)
        with open(js) as f:
            rows = [s for s in json.load(f)["stages"] if s["stage"] == "attn_norm"]
        self.assertEqual(len(rows), 2, rows)
        line = marker_line(KERNEL, "@row:same-value-store")
        for r in rows:
            self.assertEqual(r["status"], "pass", r)
            self.assertIn("benign hazard (no failure) in launch 0 of step rmsnorm_attn: ", r["note"])
            self.assertIn(f"benign WAW hazard on static shared memory", r["note"])
            self.assertIn(f"flat_rmsnorm.cu:{line}", r["note"])

    def test_a_run_memcheck_cannot_look_into_says_so(self):
        cases = [  # (candidate, what the run says)
            ("mutant:chain-add-idx", r"memcheck: \d+ of \d+ launches were not checked, their kernels built without "
                                     r"the CHECKED flavour \(.+\): no memory error of this run could "
                                     r"be found"),
            ("cpu-f16", r"memcheck: the candidate launched no SIMT kernel, so nothing was checked: cpu-f16 does not "
                        r"run on the SIMT runtime"),
        ]
        for candidate, says in cases:
            with self.subTest(candidate=candidate):
                rc, out, err = run("run", "--model", "synthetic:llama-tiny", "--candidate", candidate,
                                   "--mode", "isolated", "--decode-steps", "0", "--simt-memcheck")
                self.assertRegex(out, says)

    def test_checks_memory_part_skipped_says_why_even_when_a_leak_is_noted_after(self):
        # The plain flavour: memcheck checks none of its launches, while its leaky candidate's blocks
        # are still counted, and their note comes after memcheck's in the run.
        js = os.path.join(self.tmp.name, "check.json")
        rc, out, err = run("check", "--model", "synthetic:llama-tiny", "--candidate", f"{UNCHECKED}:leaky-rmsnorm",
                           "--fill", "reference", "--layers", "1", "--decode-steps", "1", "--json", js)
        with open(js) as f:
            memory = json.load(f)["parts"][0]
        self.assertEqual(memory["name"], "memory errors")
        self.assertRegex(memory["verdict"], r"^skipped: memcheck: \d+ of \d+ launches were not checked", memory)

    def test_the_simt_candidates_checked_kernels_pass_under_memcheck(self):
        # Every tiny preset, both modes: gpt2-tiny's layernorm and attention launch with other dynamic
        # shared memory sizes than the kernels before them (memcheck's red zones move with it).
        for model in ("gpt2-tiny", "llama-tiny", "mixtral-tiny", "qwen2-tiny", "qwen3-tiny", "qwen35-tiny",
                      "qwen3moe-tiny", "llama-deep-tiny"):
            rc, out, err = run("run", "--model", f"synthetic:{model}", "--candidate", "simt", "--mode", "both",
                               "--decode-steps", "2", "--simt-memcheck")
            self.assertEqual(rc, 0, f"{model}\n{out}{err}")
            self.assertNotIn("MEMORY", out)
            self.assertNotIn("leak:", out)  # its scratch is allocated in load() or freed within its step
            self.assertIn("memcheck", out)


if __name__ == "__main__":
    unittest.main()
