"""Writing a trace: one writer per path, and a failed write is a clear error, not a crash.

- Two runs on one --trace path: while the first is writing (its candidate hangs in layer 1 until
  --timeout), the second refuses with exit 2 naming the path and the first process, and the first
  run's trace comes out whole.
- A full disk, injected with RLIMIT_FSIZE (writes past the limit fail with EFBIG; SIGXFSZ is
  ignored so the write returns an error as on a full disk): each case of a matrix ends with exit 2
  naming its trace, the other cases still run, the JUnit file is written, nothing crashes."""
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

DS = sys.argv.pop(1)


def ds(*args, **kw):
    p = subprocess.run([DS, *args], capture_output=True, text=True, timeout=120, **kw)
    return p.returncode, p.stdout, p.stderr


def small_disk(limit_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return apply


class TraceWrites(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ds_writes_")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_second_run_on_a_trace_being_written_refuses(self):
        trace = self.path("shared.h5")
        first = subprocess.Popen([DS, "run", "-m", "synthetic:qwen2-tiny", "-c", "selftest:hang-layer1",
                                  "--timeout", "4", "-o", trace],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Layer 0 is written within a second; the candidate then hangs in layer 1.
            deadline = time.monotonic() + 30
            while not (os.path.exists(trace) and os.path.getsize(trace) > 0) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            rc, out, err = ds("run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "-o", trace)
            self.assertEqual(rc, 2, out + err)
            self.assertIn(trace, err)
            self.assertIn(f"process {first.pid}", err)
            self.assertIn("is writing this trace", err)
        finally:
            out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 4, out + err)  # the hang, reported as a crash
        rc, out, err = ds("report", trace)
        self.assertEqual(rc, 4, out + err)
        self.assertIn("CRASHED", out)
        self.assertIn("selftest:hang-layer1", out)

    def test_a_full_disk_is_exit_2_and_the_other_cases_still_report(self):
        traces, junit = self.path("traces"), self.path("shard.xml")
        os.makedirs(traces)
        p = subprocess.run([DS, "run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--seed", "0", "--seed", "1",
                            "--decode-steps", "2", "--trace-dir", traces, "--junit", junit],
                           capture_output=True, text=True, timeout=120, preexec_fn=small_disk(100_000))
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        for k in (0, 1):
            self.assertIn(os.path.join(traces, f"case-{k}-of-2.h5"), p.stderr)
        self.assertIn("2 of 2 case(s) not at parity; exit code 2", p.stdout)
        suites = ET.parse(junit).getroot()
        self.assertEqual(suites.get("failures"), "2")
        for suite in suites.findall("testsuite"):
            self.assertEqual(suite.find("testcase/failure").get("type"), "BAD-INPUT")
        # Whatever the cut left, reading it is an answer, not a crash or a pass.
        for k in (0, 1):
            rc, out, err = ds("report", os.path.join(traces, f"case-{k}-of-2.h5"))
            self.assertIn(rc, (1, 2), out + err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
