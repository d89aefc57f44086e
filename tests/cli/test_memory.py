"""The memory budget through the real CLI: `run` prints its estimate, refuses a run over
`--max-memory` (exit 2) before loading, and the estimate is within 25% of the peak the
harness and its candidate process really reach on real-shape presets, and on a quantized GGUF
(written here by driftscope-mkfixture, DRIFTSCOPE_MKFIXTURE), whose matrices stay quantized."""
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def kib_fields(path, *fields):
    """The sum of the named `Field:  N kB` lines of a /proc file, in bytes (0 once it is gone)."""
    total = 0
    try:
        with open(path) as f:
            for line in f:
                name, _, rest = line.partition(":")
                if name in fields:
                    total += int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return total


def pss(pid):
    return kib_fields(f"/proc/{pid}/smaps_rollup", "Pss")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def descendants(pid):
    """Every process below `pid`: the candidate process runs below a supervisor (lifeline.h)."""
    below = children(pid)
    return below + [d for c in below for d in descendants(c)]


def measured_peak(args):
    """Runs the CLI and returns (exit code, stdout + stderr, peak bytes): the peak over time of the
    proportional set size (Pss) of the harness plus every process below it (the candidate process and
    its supervisor), sampled together. Pss
    splits each page among the processes mapping it, so pages the child shares with the harness
    through fork count once, as the OOM killer sees them (a sum of the two VmHWM would count them
    twice). The weights are held from load to exit: the peak is a plateau, which sampling sees.

    The processes cannot be read at one instant. When one of them frees pages it shares with the
    other (the harness drops its weights at exit while the child still maps them), Pss moves
    from one to the other between the two reads, and a plain sum counts those pages one and a
    half times: up to ~150 MiB too much on a real-shape preset. So each process is read twice
    around the others and its smaller reading kept: a move of Pss between the reads then lowers
    the sum for one sample, never raises it."""
    # Output to a file: a full pipe nobody reads while polling would stall the run.
    with tempfile.TemporaryFile("w+") as log, \
            subprocess.Popen([DRIFTSCOPE, *args], stdout=log, stderr=subprocess.STDOUT, text=True) as p:
        peak = 0
        while p.poll() is None:
            tree = [p.pid, *descendants(p.pid)]
            first = [pss(pid) for pid in tree]
            again = [pss(pid) for pid in tree]
            peak = max(peak, sum(min(a, b) for a, b in zip(first, again)))
            time.sleep(0.05)
        log.seek(0)
        out = log.read()
    return p.returncode, out, peak


def printed_part(out, part):
    m = re.search(r"^memory: estimated peak .*[(,] ?" + part + r" ([0-9.]+) (B|KiB|MiB|GiB)[,)]", out, re.M)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


def printed_estimate(out):
    m = re.search(r"^memory: estimated peak ([0-9.]+) (B|KiB|MiB|GiB) \(", out, re.M)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


class MemoryBudget(unittest.TestCase):
    def test_estimate_is_within_a_quarter_of_the_measured_peak(self):
        cases = {
            "qwen2.5-0.5b, 2 layers, simt": ["--model", "synthetic:qwen2.5-0.5b", "--layers", "2",
                                             "--candidate", "simt", "--prompt-tokens", "2"],
            "gpt2-small, 1 layer, cpu-f16, both modes": ["--model", "synthetic:gpt2-small", "--layers", "1",
                                                         "--candidate", "cpu-f16", "--mode", "both",
                                                         "--prompt-tokens", "4", "--decode-steps", "1"],
        }
        for name, args in cases.items():
            with self.subTest(name):
                rc, out, peak = measured_peak(["run", *args])
                self.assertIn(rc, (0, 1), out)
                estimate = printed_estimate(out)
                self.assertIsNotNone(estimate, out)
                ratio = estimate / peak
                print(f"{name}: estimate {estimate / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB, "
                      f"ratio {ratio:.2f}", file=sys.stderr)
                self.assertGreaterEqual(ratio, 0.75, out)
                self.assertLessEqual(ratio, 1.25, out)

    def test_a_quantized_gguf_stays_quantized_and_is_estimated_within_a_quarter(self):
        mkfixture = os.environ.get("DRIFTSCOPE_MKFIXTURE")
        self.assertTrue(mkfixture, "DRIFTSCOPE_MKFIXTURE names driftscope-mkfixture (tests/cli/CMakeLists.txt)")
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([mkfixture, "--out", d, "--gguf-type", "q8_0", "--gguf-only", "qwen2.5-0.5b"],
                           check=True, capture_output=True, timeout=300)
            model = os.path.join(d, "qwen2.5-0.5b.gguf")
            peaks, outs = {}, {}
            for cand in ("cpu-f16", "simt"):
                with self.subTest(cand):
                    rc, out, peak = measured_peak(["run", "--model", model, "--layers", "2", "--candidate", cand,
                                                   "--prompt-tokens", "2"])
                    self.assertEqual(rc, 0, out)
                    ratio = printed_estimate(out) / peak
                    print(f"qwen2.5-0.5b Q8_0, 2 layers, {cand}: measured {peak / 2**20:.0f} MiB, ratio {ratio:.2f}",
                          file=sys.stderr)
                    self.assertGreaterEqual(ratio, 0.75, out)
                    self.assertLessEqual(ratio, 1.25, out)
                    peaks[cand], outs[cand] = peak, out
            # Both read the Q8_0 blocks where the file's mapping holds them (simt's kernels decode 32
            # weights at a time, kernels/quant_rows.cuh): simt's estimate has no decoded copy in it, and
            # neither run comes near the f32 copy of the two layers' matrices.
            self.assertIsNone(printed_part(outs["simt"], "candidate"), outs["simt"])
            f32_copy = 4 * printed_part(outs["cpu-f16"], "weights") / (34 / 32)
            for cand in ("cpu-f16", "simt"):
                self.assertLess(peaks[cand], 0.5 * f32_copy, outs[cand])
            # Refused over a budget, it says what the estimate holds, and no decoded copy.
            p = subprocess.run([DRIFTSCOPE, "run", "--model", model, "--layers", "2", "--candidate", "simt",
                                "--max-memory", "100M"], capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn("weights", p.stderr)
            self.assertNotIn("decodes this quantized model", p.stderr)

    def test_run_over_max_memory_is_refused_naming_estimate_and_budget(self):
        p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:llama3.2-1b", "--candidate", "simt",
                            "--max-memory", "1M"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("estimated", p.stderr)
        self.assertIn("weights", p.stderr)
        self.assertIn("budget of 1 MiB (--max-memory 1M)", p.stderr)
        self.assertIn("refused before loading", p.stderr)

    def test_bad_max_memory_is_exit_2_naming_the_flag(self):
        for bad in ["lots", "3Q", "0", "-5G"]:
            with self.subTest(bad):
                p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:llama-tiny", "--max-memory", bad],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("--max-memory", p.stderr)

    def test_run_prints_its_estimate_in_one_line(self):
        p = subprocess.run([DRIFTSCOPE, "run", "--model", "synthetic:llama-tiny", "--candidate", "cpu-f16"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = [l for l in p.stdout.splitlines() if l.startswith("memory: estimated peak")]
        self.assertEqual(len(lines), 1, p.stdout)
        self.assertIn("weights", lines[0])


if __name__ == "__main__":
    unittest.main()
