"""run --batch through the real CLI (docs/batches.md): a ragged batch of 1, 5, 8 and 13 tokens with
3 decode steps passes on every tiny preset for the correct kernels, every stage judged per sequence
with the sequence in the trace and the JSON report; a batch file's fields (decode steps per
sequence, start positions, slots); and bad batch input is exit 2 naming the flag or field."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import h5py

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
RAGGED = ["--batch", "4", "--batch-prompts", "1,5,8,13", "--decode-steps", "3"]
# The hybrid's fused decode ops with ids: B (GDN) and D (conv), docs/batches.md "State slots".
IDS_VARIANT = ["--gdn-variant", "ids,conv-update-ids"]
# The shipped example (README, docs/batches.md "State slots"): a moved and a reset sequence.
SLOT_BATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "batches",
                          "moved-and-reset.yaml")
# (step, seq) -> (from_slot, to_slot, kind) of SLOT_BATCH
EXPECTED_SLOTS = {
    (0, 0): (None, 0, "reset"), (0, 1): (None, 1, "reset"),
    (1, 0): (0, 0, "identity"), (1, 1): (1, 1, "identity"),
    (2, 1): (1, 0, "moved"), (2, 2): (None, 1, "reset"),
    (3, 1): (0, 0, "identity"), (3, 2): (1, 1, "identity"),
    (4, 2): (1, 0, "moved"),
}


def run(*args, timeout=300):
    p = subprocess.run([DRIFTSCOPE, "run", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def tiny_presets():
    help_text = subprocess.run([DRIFTSCOPE, "run", "--help"], capture_output=True, text=True).stdout
    presets = re.search(r"Presets: ([^\n]*)", help_text).group(1)
    return [p.strip() for p in presets.split(",") if p.strip().endswith("-tiny")]


def run_attrs(trace):
    with h5py.File(trace, "r") as f:
        raw = f.attrs["run"]
        return json.loads(raw.decode() if isinstance(raw, bytes) else raw)


def summary(trace):
    with h5py.File(trace, "r") as f:
        return f["summary"][:]


class Batch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def test_a_ragged_batch_passes_on_every_tiny_preset_for_the_correct_kernels(self):
        presets = tiny_presets()
        self.assertIn("qwen35-tiny", presets)  # the hybrid: GDN layers batched through state slots
        self.assertIn("gpt2-tiny", presets)  # learned positions per sequence
        self.assertIn("qwen3moe-tiny", presets)
        self.assertIn("mixtral-tiny", presets)
        for preset in presets:
            for cand in ("cpu-f16", "simt"):
                with self.subTest(preset=preset, candidate=cand):
                    # A model the candidate cannot serve is refused before any compute (exit 3),
                    # batch or not; cpu-f16 serves every family.
                    served = subprocess.run([DRIFTSCOPE, "gate", "--model", f"synthetic:{preset}", "--candidate", cand],
                                            capture_output=True).returncode == 0
                    self.assertTrue(served or cand != "cpu-f16", preset)
                    rc, out, err = run("--model", f"synthetic:{preset}", "--candidate", cand, *RAGGED,
                                       "--mode", "both")
                    self.assertEqual(rc, 0 if served else 3, out + err)

    def test_every_stage_is_judged_per_sequence_in_the_trace_and_json(self):
        trace, report = self.path("b.h5"), self.path("b.json")
        rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", "cpu-f16", *RAGGED,
                           "--trace", trace, "--json", report)
        self.assertEqual(rc, 0, out + err)
        rows = summary(trace)
        self.assertEqual(sorted(set(rows["seq"].tolist())), [0, 1, 2, 3])
        # The prefill of sequence s holds its own prompt's rows: 1, 5, 8, 13; each decode step one row.
        for seq, length in enumerate([1, 5, 8, 13]):
            embed = [r for r in rows if r["seq"] == seq and r["stage"] == b"embed"]
            self.assertEqual([int(r["step"]) for r in embed], [0, 1, 2, 3])
            self.assertEqual(int(embed[0]["shape"][0]), length)
            self.assertTrue(all(int(r["shape"][0]) == 1 for r in embed[1:]))
        batch = run_attrs(trace)["batch"]
        self.assertEqual([s["prompt_tokens"] for s in batch["sequences"]], [1, 5, 8, 13])
        self.assertEqual(batch["served"]["decoder"], "batched")
        with open(report) as f:
            j = json.load(f)
        self.assertEqual(j["batch_size"], 4)
        self.assertEqual(sorted({s["seq"] for s in j["stages"]}), [0, 1, 2, 3])

    def test_the_hybrid_batches_its_gdn_layers(self):
        trace = self.path("h.h5")
        for cand in ("cpu-f16", "simt"):
            with self.subTest(cand):
                rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", cand, *RAGGED,
                                   "--trace", trace)
                self.assertEqual(rc, 0, out + err)
                served = run_attrs(trace)["batch"]["served"]
                self.assertEqual((served["gdn"], served["gated_attn"]), ("batched", "batched"))

    def slot_batch(self):
        return SLOT_BATCH

    def test_a_moved_and_a_reset_sequence_run_fused_ops_b_and_d(self):
        # Sequence 0 leaves after step 1, so sequence 1's state moves from slot 1 to slot 0 at step 2;
        # sequence 2 joins at step 2 with one token: a reset in that decode call.
        trace = self.path("slots.h5")
        # cpu-f16 has no fused ops (the plain recurrence per sequence); simt runs ops B and D.
        for cand, variant in (("cpu-f16", []), ("simt", IDS_VARIANT)):
            with self.subTest(cand):
                rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", cand, *variant,
                                   "--batch", self.slot_batch(), "--mode", "both", "--trace", trace)
                self.assertEqual(rc, 0, out + err)
                slots = {(m["step"], m["seq"]): (m["from_slot"], m["to_slot"], m["kind"])
                         for m in run_attrs(trace)["batch"]["slots"]}
                self.assertEqual(slots, EXPECTED_SLOTS)
        # simt's launches: every decode call of layer 0 (a GDN layer) is one launch of op D and one of
        # op B over all its sequences (each launches its gather first); the prefill runs the plain ops.
        rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", "simt", *IDS_VARIANT,
                           "--batch", self.slot_batch(), "--batch-checks", "none", "--trace", trace)
        self.assertEqual(rc, 0, out + err)
        with h5py.File(trace, "r") as f:
            launches = f["launches"][:]
        gathers = {}
        for row in launches:
            if b"gather_nonident" in row["kernel"] and int(row["layer"]) == 0 and int(row["mode"]) == 0:
                gathers.setdefault(int(row["step"]), []).append(row["stages"].decode())
        self.assertEqual(gathers, {step: ["conv,conv_state", "gdn_out,gdn_state"] for step in (1, 2, 3, 4)})

    def test_sequence_zero_of_a_batch_is_the_run_of_one_sequence(self):
        # Same seed and length: sequence 0's prompt is the single run's, and so are its tokens.
        one, batch = self.path("one.json"), self.path("batch.json")
        rc, out, err = run("--model", "synthetic:llama-tiny", "--prompt-tokens", "5", "--decode-steps", "2",
                           "--json", one)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run("--model", "synthetic:llama-tiny", "--batch", "3", "--batch-prompts", "5,2,7",
                           "--decode-steps", "2", "--json", batch)
        self.assertEqual(rc, 0, out + err)
        with open(one) as f:
            a = json.load(f)
        with open(batch) as f:
            b = json.load(f)
        stages_a = {(s["step"], s["layer"], s["stage"]): s["metrics"]["cand_hash"] for s in a["stages"]}
        stages_b = {(s["step"], s["layer"], s["stage"]): s["metrics"]["cand_hash"] for s in b["stages"]
                    if s["seq"] == 0}
        self.assertEqual(stages_a, stages_b)

    def test_a_batch_file_gives_each_sequence_its_decode_steps_start_and_slot(self):
        spec = self.write("batch.yaml", """
sequences:
  - prompt: 3
    decode: 2
  - tokens: [7, 8, 9, 10]
    decode: 0
  - prompt: 2
    decode: 3
    start: 6
    slot: 7
""")
        trace = self.path("f.h5")
        for cand in ("cpu-f16", "simt"):
            rc, out, err = run("--model", "synthetic:gpt2-tiny", "--candidate", cand, "--batch", spec,
                               "--mode", "both", "--trace", trace)
            self.assertEqual(rc, 0, out + err)
            rows = summary(trace)
            steps = {seq: sorted({int(r["step"]) for r in rows if r["seq"] == seq}) for seq in (0, 1, 2)}
            self.assertEqual(steps, {0: [0, 1, 2], 1: [0], 2: [0, 1, 2, 3]})
            batch = run_attrs(trace)["batch"]
            self.assertEqual([s["start"] for s in batch["sequences"]], [0, 0, 6])
            self.assertEqual([s["slot"] for s in batch["sequences"]], [0, 1, 7])

    def test_each_batched_mutant_is_caught_at_its_stage_and_sequence(self):
        # (mutant, stage, layer, step, sequence, status, words the note must hold)
        cases = [
            ("mutant:batch-seq-offset", "attn", 0, 0, 1, "leak", "perturbing sequence 0's inputs moved sequence 1's attn"),
            ("mutant:batch-wrong-position", "q_rope", 0, 1, 0, "batch-variant", "differs from the same sequence run alone"),
            ("mutant:batch-neighbour-row", "attn_norm", 0, 0, 0, "leak",
             "perturbing sequence 1's inputs moved sequence 0's attn_norm"),
        ]
        for mutant, stage, layer, step, seq, status, note in cases:
            with self.subTest(mutant):
                report = self.path("m.json")
                rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", mutant, *RAGGED, "--json", report)
                self.assertEqual(rc, 1, out + err)
                with open(report) as f:
                    first = json.load(f)["first_failure"]
                self.assertEqual((first["stage"], first["layer"], first["step"], first["seq"], first["status"]),
                                 (stage, layer, step, seq, status), first["note"])
                self.assertIn(note, first["note"])
                self.assertIn(f"at step {step} of sequence {seq}", out)
                # A run of one sequence never makes the batched call the bug is planted in.
                rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", mutant, "--decode-steps", "3")
                self.assertEqual(rc, 0, out + err)

    def test_a_declared_batch_dependent_order_is_held_within_the_floor(self):
        # cpu-f16-split-k sums its dense projections split-K by the batch's size and declares it:
        # correct, held within the floor. The same order undeclared is held bit for bit, and fails.
        for preset in ("qwen3-tiny", "llama-tiny", "gpt2-tiny"):
            with self.subTest(preset=preset):
                trace = self.path("o.h5")
                rc, out, err = run("--model", f"synthetic:{preset}", "--candidate", "cpu-f16-split-k", *RAGGED,
                                   "--mode", "both", "--trace", trace)
                self.assertEqual(rc, 0, out + err)
                self.assertIn("cpu-f16-split-k declares a batch-dependent reduction order for", out)
                self.assertIn("decoder" if preset != "gpt2-tiny" else "gpt2", run_attrs(trace)["batch"]["order_varies"])
        report = self.path("u.json")
        rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", "mutant:batch-order-undeclared", *RAGGED,
                           "--json", report)
        self.assertEqual(rc, 1, out + err)
        with open(report) as f:
            j = json.load(f)
        self.assertEqual(j["first_failure"]["status"], "batch-variant", j["first_failure"])
        self.assertIn("differs from the same sequence run alone", j["first_failure"]["note"])
        self.assertEqual(j["batch_size"], 4)
        variant = [s for s in j["stages"] if s["status"] == "batch-variant"]
        self.assertTrue(variant)
        # Every variant is a projection's output, the stages the split order changes.
        self.assertLessEqual({s["stage"] for s in variant},
                             {"q", "k", "v", "attn_out", "gate", "up", "down", "logits"})

    def test_gdn_ids_ignored_is_caught_at_the_moved_sequence(self):
        # Op D (the conv) runs before op B: reading sequence 1's destination slot 0 (stale, sequence 0
        # left) instead of slot 1 fails its conv at step 2. The leak check alone: the invariance
        # check's lone call is a run of one sequence's, whose odd steps stage the state in another slot.
        report = self.path("ids.json")
        rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", "mutant:gdn-ids-ignored", *IDS_VARIANT,
                           "--batch", self.slot_batch(), "--batch-checks", "leak", "--json", report)
        self.assertEqual(rc, 1, out + err)
        with open(report) as f:
            j = json.load(f)
        first = j["first_failure"]
        self.assertEqual((first["stage"], first["step"], first["seq"], first["mode"]), ("conv", 2, 1, "isolated"),
                         first)
        # Sequence 2, a reset in the same call, reads sequence 1's prior state (its destination slot 1)
        # instead of the zeroed slot: the leak check names the pair.
        leak = [s for s in j["stages"] if (s["step"], s["layer"], s["stage"], s["seq"], s["mode"]) ==
                (2, 0, "conv", 2, "isolated")]
        self.assertEqual([s["status"] for s in leak], ["leak"])
        self.assertIn("perturbing sequence 1's inputs moved sequence 2's conv", leak[0]["note"])
        self.assertEqual(first["layer"], 0)  # qwen35-tiny: layers 0 and 2 are GDN layers
        self.assertIn("at step 2 of sequence 1", out)
        # The correct kernels on the same batch pass (the test above); so does the mutant on a batch
        # whose every decode call is an identity for every sequence and no sequence resets.
        rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", "mutant:gdn-ids-ignored", *IDS_VARIANT,
                           "--batch", "2", "--batch-prompts", "3,4", "--decode-steps", "2", "--batch-checks", "leak")
        self.assertEqual(rc, 0, out + err)

    def test_a_rejudged_trace_keeps_the_leak_and_names_the_sequence(self):
        trace = self.path("leak.h5")
        rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", "mutant:batch-neighbour-row", *RAGGED,
                           "--trace", trace)
        self.assertEqual(rc, 1, out + err)
        p = subprocess.run([DRIFTSCOPE, "report", trace], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("First failing stage: attn_norm of layer 0 at step 0 of sequence 0 (isolated mode): leak",
                      p.stdout)
        # A batched step's inputs are every sequence's: none are stored, and replay says so.
        p = subprocess.run([DRIFTSCOPE, "replay", trace, "--step", "0", "--layer", "0", "--stage", "attn_norm",
                            "--candidate", "cpu-f16"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("a batch run (run --batch) stores no step inputs", p.stderr)

    def test_drift_is_located_per_sequence(self):
        # A sequence continued from a prefix (start) with a one-token prompt: the candidate's lanes
        # start from the reference's prefix, and so do the noise floors. A chained floor that ran
        # the prefix on its own outputs started with compounded error and made correct simt "drift".
        batch = self.write("start.yaml", "sequences:\n  - prompt: 5\n    decode: 3\n"
                                         "  - prompt: 1\n    decode: 3\n    start: 2\n"
                                         "  - prompt: 8\n    decode: 2\n")
        for cand in ("simt", "cpu-f16"):
            rc, out, err = run("--model", "synthetic:qwen35-tiny", "--candidate", cand, "--batch", batch,
                               "--mode", "both")
            self.assertEqual(rc, 0, out + err)
            self.assertIn("No drift:", out)
            self.assertIn("every sequence", out)
        # Each sequence is its own chain: the drift names the sequence it was found in.
        rc, out, err = run("--model", "synthetic:llama-deep-tiny", "--candidate", "mutant:drift-from-layer3",
                           "--batch", "2", "--mode", "chained")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("Drift begins at layer 3 of sequence 0:", out)

    def test_diff_of_two_batch_traces_matches_and_names_each_sequence(self):
        base, cur, js = self.path("base.h5"), self.path("cur.h5"), self.path("diff.json")
        args = ["--model", "synthetic:qwen3-tiny", "--batch", "3", "--batch-prompts", "2,5,3", "--mode", "both"]
        rc, out, err = run(*args, "--candidate", "cpu-f16", "--trace", base)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = run(*args, "--candidate", "mutant:batch-seq-offset", "--trace", cur)
        self.assertEqual(rc, 1, out + err)
        p = subprocess.run([DRIFTSCOPE, "diff", base, cur, "--json", js], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        # The offset reads its neighbour's cache rows: sequence 1 regresses; sequence 0, whose rows
        # it never reads, does not (matched with its own rows, not with sequence 1's).
        self.assertIn("First regression: step 0 layer 0 attn of sequence 1 (isolated", p.stdout)
        with open(js) as f:
            d = json.load(f)
        first = d["first_regression"]
        self.assertEqual((first["stage"], first["seq"], first["layer"]), ("attn", 1, 0))
        changes = [c for case in d["cases"] for c in case.get("changes", [])]
        self.assertTrue(changes)
        self.assertFalse([c for c in changes if c["regression"] and c["seq"] == 0 and c["layer"] == 0
                          and c["stage"] == "attn"])

    def test_the_leak_check_sees_a_leak_the_oracle_cannot(self):
        # Every seeded prompt starts with the sink token, so sequence 0's one row and its neighbour's
        # first row have the same RMS: borrowing it leaves sequence 0's values right, and only the
        # leak check (perturbing sequence 1) shows that they depend on the neighbour.
        report = self.path("n.json")
        rc, out, err = run("--model", "synthetic:qwen3-tiny", "--candidate", "mutant:batch-neighbour-row", *RAGGED,
                           "--batch-checks", "none", "--json", report)
        self.assertEqual(rc, 1, out + err)
        with open(report) as f:
            j = json.load(f)
        self.assertNotIn("leak", {s["status"] for s in j["stages"]})
        first_norm = [s for s in j["stages"] if (s["step"], s["layer"], s["stage"], s["seq"], s["mode"]) ==
                      (0, 0, "attn_norm", 0, "isolated")]
        self.assertEqual([s["status"] for s in first_norm], ["pass"])
        self.assertEqual((j["first_failure"]["stage"], j["first_failure"]["seq"]), ("attn_norm", 1))

    def test_bad_batch_input_is_exit_2_naming_the_flag_or_field(self):
        cases = {
            "a count below one": (["--batch", "0"], "--batch 0"),
            "prompts not matching the count": (["--batch", "2", "--batch-prompts", "1,2,3"], "--batch-prompts"),
            "a prompt length that is no number": (["--batch", "2", "--batch-prompts", "1,x"], "'x'"),
            "an empty prompt": (["--batch", "2", "--batch-prompts", "1,0"], "sequence 1: prompt 0"),
            "prompts without a batch": (["--batch-prompts", "1,2"], "--batch-prompts"),
            "a missing file": (["--batch", self.path("nowhere.yaml")], "nowhere.yaml"),
            "an unknown field": (["--batch", self.write("u.yaml", "sequences:\n  - prompt: 2\n    lenght: 3\n")],
                                 "sequence 0: lenght"),
            "a shared slot": (["--batch", self.write("s.yaml", "sequences:\n  - prompt: 2\n  - prompt: 3\n    slot: 0\n")],
                              "sequence 1: slot 0"),
            "a token outside the vocabulary": (["--batch", self.write("t.yaml", "sequences:\n  - tokens: [1, 99999999]\n")],
                                               "99999999"),
            "no sequences list": (["--batch", self.write("n.yaml", "prompt: 3\n")], "'sequences'"),
            "too many positions": (["--batch", "2", "--batch-prompts", "1,100000"], "positions"),
            "with a baseline": (["--batch", "2", "--baseline", "simt"], "--baseline with --batch"),
            "with a probe": (["--batch", "2", "--probe", "tiny-rows"], "--probe with --batch"),
            "with --tokens": (["--batch", "2", "--tokens", "1,2"], "--tokens with --batch"),
            "an unknown check": (["--batch", "2", "--batch-checks", "leaks"], "'leaks' is not a check"),
            "checks without a batch": (["--batch-checks", "leak"], "--batch-checks"),
            "a negative join": (["--batch", self.write("j.yaml", "sequences:\n  - prompt: 2\n    join: -1\n")],
                                "sequence 0: join -1"),
            "a join into an empty batch": (
                ["--batch", self.write("g.yaml", "sequences:\n  - prompt: 2\n  - prompt: 1\n    join: 3\n")],
                "sequence 1: join 3"),
            "a joining slot written before it joins": (
                ["--batch", self.write("c.yaml", "sequences:\n  - prompt: 2\n    decode: 3\n    slot: 5\n"
                                       "  - prompt: 1\n    start: 2\n    join: 2\n    slot: 0\n")],
                "sequence 1: slot 0 (step 0 writes sequence 0's state there before it joins at step 2)"),
        }
        for name, (args, needle) in cases.items():
            with self.subTest(name):
                rc, out, err = run("--model", "synthetic:qwen2-tiny", *args)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(needle, out + err)


if __name__ == "__main__":
    unittest.main()
