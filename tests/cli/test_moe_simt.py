"""The simt candidate on mixture-of-experts models through the real CLI (docs/moe.md): the fused
routing kernel and the grouped experts (kernels/moe_route.cu, kernels/moe_experts.cu) serve every
MoE preset, both modes, 8 prompt tokens and 2 decode steps, exit 0; the real-shape qwen3-30b-a3b
with one layer too; Qwen3-Next (its shared expert on kernels/moe_experts.cu and kernels/moe_shexp.cu)
over seeds 0-9; a near-tie the routing kernel breaks the other way is named in the output."""
import subprocess
import sys
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
# (preset, extra flags): every MoE preset; the real-shape one with --layers 1 (about 2.5 GB).
RUNS = [("qwen3moe-tiny", []), ("qwen3moe-unnormed-tiny", []), ("mixtral-tiny", []),
        ("qwen3moe-tails-tiny", []), ("qwen3next-tiny", []), ("qwen3-30b-a3b", ["--layers", "1"])]


def run(preset, *extra):
    p = subprocess.run([DRIFTSCOPE, "run", "--model", f"synthetic:{preset}", "--candidate", "simt", "--mode",
                        "both", "--prompt-tokens", "8", "--decode-steps", "2", *extra],
                       capture_output=True, text=True, timeout=240)
    return p.returncode, p.stdout + p.stderr


class MoeSimt(unittest.TestCase):
    def test_every_moe_preset_passes(self):
        for preset, extra in RUNS:
            with self.subTest(preset=preset):
                rc, out = run(preset, "--all", *extra)
                self.assertEqual(rc, 0, out[-3000:])
                self.assertIn("PASS:", out)
                for stage in ("router_logits", "expert_ids", "expert_weights", "moe_out"):
                    self.assertIn(stage, out, "every MoE stage is judged")

    def test_qwen3next_passes_seeds_0_to_9_with_its_shared_expert_judged(self):
        for seed in range(10):
            with self.subTest(seed=seed):
                rc, out = run("qwen3next-tiny", "--seed", str(seed), "--all")
                self.assertEqual(rc, 0, out[-3000:])
                self.assertRegex(out, r"PASS: \d+ stages within policy")
                for stage in ("shexp_out", "shexp_gate", "ffn_out"):
                    self.assertIn(stage, out, "every shared-expert stage is judged")

    def test_a_near_tie_the_kernel_breaks_the_other_way_is_named(self):
        rc, out = run("qwen3moe-unnormed-tiny", "--seed", "7")
        self.assertEqual(rc, 0, out[-3000:])
        self.assertIn("near-tie in the MoE router, step 0 layer 1 token 1 (isolated): the candidate chose expert 11",
                      out)


if __name__ == "__main__":
    unittest.main()
