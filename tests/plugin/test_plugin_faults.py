"""A user's plugin is untrusted code: a table of every fault it can commit against the harness.

Each case is a two-case matrix, the faulty candidate then a correct one, as a nightly job runs it.
For every case: the documented exit code for the faulty case (4 a crash, 1 a judged failure), its
trace complete and re-read by `report` with the same exit code, the harness's peak memory within a
fixed bound, no process of the plugin's left running, and the correct case still judged (PASS)
with the matrix's JUnit file written.
"""
import os
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from plugin_processes import alive, describe, plugin_processes

DRIFTSCOPE, FAULTS, GOOD = sys.argv[1:4]
del sys.argv[1:]

# fault -> (exit code of its case, a phrase its crash or failure names)
CASES = {
    "load-segv": (4, "signal 11"),
    "load-hang": (4, "hung"),
    "load-throw": (4, "the fault plugin throws on purpose"),
    "plan-segv": (4, "signal 11"),
    "plan-hang": (4, "hung"),
    "plan-throw": (4, "the fault plugin throws on purpose"),
    "run-segv": (4, "signal 11"),
    "run-hang": (4, "hung"),
    "run-throw": (4, "the fault plugin throws on purpose"),
    "reply-bad-dtype": (4, "unknown dtype 77"),
    "reply-negative-shape": (4, "negative dimension -5"),
    "reply-huge-shape": (4, "more than"),
    "reply-length-2e39": (4, "549755813888 bytes"),
    "reply-random-bytes": (4, "malformed reply"),
    "nan": (1, "nan"),
    "exit0": (4, "exited with status 0"),
    "fork-crash": (4, "signal 11"),
}
# The harness holds a tiny model: whatever a plugin claims, its peak stays far below this.
MAX_RSS_KIB = 768 * 1024
# What wraps each run: the peak resident set of driftscope and what it waited for, in KiB.
MEASURE = ("import resource, subprocess, sys\n"
           "rc = subprocess.call(sys.argv[1:])\n"
           "print('maxrss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
           "sys.exit(rc)\n")


class PluginFaults(unittest.TestCase):
    def run_case(self, fault):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        traces = os.path.join(tmp.name, "traces")
        junit = os.path.join(tmp.name, "matrix.xml")
        pid_file = os.path.join(tmp.name, "helper.pid")
        env = dict(os.environ, DS_FAULT_PID_FILE=pid_file)
        cmd = [sys.executable, "-c", MEASURE, DRIFTSCOPE, "run", "--model", "synthetic:qwen2-tiny",
               "--candidate", f"{FAULTS}:fault-{fault}", "--candidate", f"{GOOD}:test-rmsnorm",
               "--fill", "reference", "--prompt-tokens", "4", "--decode-steps", "1", "--timeout", "3",
               "--trace-dir", traces, "--junit", junit]
        start = time.monotonic()
        # stdout is a pipe, as in `driftscope run ... | cat`: anything left holding it would hang here.
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=200, env=env)
        return p, time.monotonic() - start, traces, junit, pid_file

    def test_faults(self):
        for fault, (code, says) in CASES.items():
            with self.subTest(fault=fault):
                p, seconds, traces, junit, pid_file = self.run_case(fault)
                out = p.stdout + p.stderr
                self.assertNotIn("terminate called", out)
                self.assertNotIn(p.returncode, (134, -6, 139, -11), out[-2000:])
                self.assertEqual(p.returncode, max(code, 0), out[-3000:])
                self.assertIn(says, out, out[-3000:])
                if says == "hung":
                    # --timeout 3 bounds a hang in load(), plan() or a step alike (a plan() probe
                    # had its own minute).
                    self.assertLess(seconds, 30, f"{fault}: {seconds:.0f} s under --timeout 3")
                rss = int(out.rsplit("maxrss_kib", 1)[1].split()[0])
                self.assertLess(rss, MAX_RSS_KIB, f"{fault}: peak {rss} KiB")
                # The faulty case's trace is complete and says what the run said.
                fault_trace = os.path.join(traces, "case-0-of-2.h5")
                r = subprocess.run([DRIFTSCOPE, "report", fault_trace], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, code, r.stdout + r.stderr)
                self.assertNotIn("INCOMPLETE", r.stdout)
                # The other case ran and passed, and the matrix wrote its JUnit.
                g = subprocess.run([DRIFTSCOPE, "report", os.path.join(traces, "case-1-of-2.h5")],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(g.returncode, 0, g.stdout + g.stderr)
                suites = ET.parse(junit).getroot()
                names = [s.get("name") for s in suites.iter("testsuite")]
                self.assertTrue(any("test-rmsnorm" in (n or "") for n in names), names)
                # Nothing the plugin started is still running.
                deadline = time.monotonic() + 5
                while plugin_processes(FAULTS) and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertEqual(describe(plugin_processes(FAULTS)), [], fault)
                if os.path.exists(pid_file):
                    with open(pid_file) as f:
                        helper = int(f.read())
                    self.assertFalse(alive(helper), f"{fault}: the plugin's helper {helper} outlived the run")


if __name__ == "__main__":
    unittest.main()
