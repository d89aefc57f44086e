"""scripts/gpu-check.sh without a GPU: the plan it prints, and its whole pipeline on simt's twin.

The dry run is what CI can check of a script written for a machine it never has. The forced run
(GPU_CHECK_FORCE=1, with --prebuilt pointing at this build's programs) drives every step, the
run/JSON/trace bookkeeping and the summary, so that the first GPU session does not find a typo.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(DRIFTSCOPE)))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")
STEPS = ["facts", "build", "parity", "baseline", "real_shapes", "gdn_bitexact", "cupti", "fla_gdn", "bench"]
PROGRAMS = {"driftscope": "harness/driftscope", "test_gdn": "tests/gdn/test_gdn",
            "test_harness": "tests/harness/test_harness", "bench_kernels": "bench/kernels/bench_kernels",
            "driftscope-mkfixture": "reference/tools/driftscope-mkfixture"}


def no_gpu_env(tmp, **extra):
    """PATH with an nvidia-smi that finds no device, as on a machine with the driver tools and no GPU."""
    fake = os.path.join(tmp, "fakebin")
    os.makedirs(fake, exist_ok=True)
    smi = os.path.join(fake, "nvidia-smi")
    with open(smi, "w") as f:
        f.write("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the driver' >&2\nexit 9\n")
    os.chmod(smi, 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ["PATH"], OUT=os.path.join(tmp, "out"))
    env.update(extra)
    return env


class DryRun(unittest.TestCase):
    def check_plan(self, stdout):
        listed = re.findall(r"^  (\d+)\. (\w+) \(limit (\d+) s\): (.+)$", stdout, re.M)
        self.assertEqual([s for _, s, _, _ in listed], STEPS, stdout)
        self.assertEqual([int(i) for i, _, _, _ in listed], list(range(1, len(STEPS) + 1)))
        budget = int(re.search(r"budget (\d+) s", stdout).group(1))
        # The promise: under 8 minutes on one GPU, build included, whatever each step does.
        self.assertLessEqual(budget, 480)
        self.assertLessEqual(sum(int(l) for _, _, l, _ in listed), budget)
        text = stdout
        for must in ["--candidate cuda", "--mode both", "--gdn-variant", "inplace = A", "conv-update-ids = D",
                     "--baseline simt", "strict.yaml", "GdnCuda", "--profile", "CUPTI", "^cuda/", "peak bandwidth",
                     "--layers 2", "nvidia-smi"]:
            self.assertIn(must, text)

    def test_no_gpu_prints_the_plan_builds_nothing_and_exits_0(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = no_gpu_env(tmp, GPU_CHECK_BUILD_DIR=os.path.join(tmp, "build-gpu"))
            p = subprocess.run([SCRIPT], capture_output=True, text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("no NVIDIA GPU here", p.stdout)
            self.check_plan(p.stdout)
            self.assertFalse(os.path.exists(os.path.join(tmp, "build-gpu")), "a dry run must not build")
            self.assertFalse(os.path.exists(os.path.join(tmp, "out")), "a dry run must not write results")

    def test_dry_run_flag(self):
        p = subprocess.run([SCRIPT, "--dry-run"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check_plan(p.stdout)

    def test_bad_arguments_exit_2(self):
        p = subprocess.run([SCRIPT, "--frobnicate"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--frobnicate", p.stderr)


class ForcedRunWithoutGpu(unittest.TestCase):
    """Every step, on this build's programs: cuda runs refuse (no device), the rest is bookkeeping."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        bundle = os.path.join(cls.tmp.name, "bundle")
        os.makedirs(os.path.join(bundle, "bin"))
        for name, rel in PROGRAMS.items():
            os.symlink(os.path.join(BUILD, rel), os.path.join(bundle, "bin", name))
        with open(os.path.join(bundle, "arch"), "w") as f:
            f.write("90\n")
        env = no_gpu_env(cls.tmp.name, GPU_CHECK_FORCE="1", GPU_CHECK_BUDGET_S="240")
        cls.out = env["OUT"]
        cls.p = subprocess.run([SCRIPT, "--prebuilt", bundle], capture_output=True, text=True, env=env,
                               timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_step_is_recorded(self):
        with open(os.path.join(self.out, "steps.tsv")) as f:
            steps = [line.split("\t")[0] for line in f.read().splitlines()[1:]]
        self.assertEqual(steps, STEPS, self.p.stdout[-3000:])

    def test_cuda_runs_are_recorded_and_none_passes_without_a_device(self):
        with open(os.path.join(self.out, "results.json")) as f:
            res = json.load(f)
        parity = [r for r in res["runs"] if r["step"] == "parity"]
        names = {r["case"] for r in parity}
        for must in ["qwen2-tiny", "gpt2-tiny", "file-gpt2-tiny", "file-qwen3-tiny.gguf", "llama-tiny",
                     "qwen35-tiny-conv-update-ids", "file-qwen35-tiny-plain", "file-qwen3next-tiny.gguf-inplace"]:
            self.assertIn(must, names)
        self.assertEqual(len(names), len(parity), "two cases share a name")
        real = {r["case"] for r in res["runs"] if r["step"] == "real_shapes"}
        for must in ["qwen2.5-0.5b", "gpt2-small-vs-simt", "q4_k_m-llama-wide", "q4_k_m-qwen3moe-wide-vs-simt"]:
            self.assertIn(must, real)
        baseline = [r for r in res["runs"] if r["step"] == "baseline"]
        self.assertEqual(len(baseline), len(parity))
        # Without a device the cuda candidate cannot run: no case may read as a pass.
        for r in res["runs"]:
            self.assertNotEqual(r["exit"], "0", r)

    def test_summary_reads_real_gtest_and_benchmark_output(self):
        with open(os.path.join(self.out, "results.json")) as f:
            res = json.load(f)
        self.assertEqual([t["test"] for t in res["gdn_bitexact"]], ["GdnCuda.FusedEqualPlainBitForBitOnTheGpu"])
        self.assertEqual(res["gdn_bitexact"][0]["result"], "skipped")
        self.assertEqual(res["cupti"][0]["result"], "skipped")
        self.assertTrue(res["bench"]["cases"], "bench_kernels' cuda cases are listed, each with its error")
        self.assertTrue(all(b["error"] for b in res["bench"]["cases"]))
        with open(os.path.join(self.out, "gpu-results.md")) as f:
            md = f.read()
        for section in ["# Results on a GPU", "## Steps", "## driftscope runs", "## GDN bit-exactness",
                        "## CUPTI launch records", "## bench/kernels"]:
            self.assertIn(section, md)

    def test_outputs_fit_what_a_device_call_returns(self):
        # A device call brings back at most 8 files, 2 folders down: the check's results must be there.
        top = sorted(os.listdir(self.out))
        for name in ["log.txt", "steps.tsv", "runs.tsv", "results.json", "gpu-results.md", "runs.tar.gz",
                     "bench_kernels.json"]:
            self.assertIn(name, top)
        self.assertLessEqual(len([n for n in top if os.path.isfile(os.path.join(self.out, n))]), 8)


if __name__ == "__main__":
    unittest.main()
