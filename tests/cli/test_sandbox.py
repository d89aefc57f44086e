"""Issue 53 item 7: untrusted host code in a sandbox (docs/sandbox.md). A plugin whose host code
runs a shell, opens a TCP socket or writes outside its temp dir, and Python candidates doing the
same: unconfined (plain `run`) the shell's file appears; under `run --sandbox` and under `verify`
(its default) nothing is written, and the step crashes (exit 4) naming the call: execve, socket,
os.system, open(...) for writing. A native write elsewhere is stopped (Landlock) and named (the
seccomp listener sees the open for writing); one under the run's temp dir goes on.
Driftscope's own candidates run unconfined, saying so.

Usage: test_sandbox.py DRIFTSCOPE FAULTS.so"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

DRIFTSCOPE, FAULTS = sys.argv[1:3]
del sys.argv[1:3]
HOSTILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_candidates", "hostile.py")
TINY = ["--model", "synthetic:qwen2-tiny", "--fill", "reference"]


class Sandbox(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.target = os.path.join(self.tmp.name, "written-by-the-candidate")
        self.env = dict(os.environ, DRIFTSCOPE_PYTHON="/usr/bin/python3", DS_FAULT_PID_FILE=self.target,
                        DS_HOSTILE_FILE=self.target)

    def run_cli(self, *args):
        return subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=600, env=self.env)

    def written(self):
        return [f for f in os.listdir(self.tmp.name) if f.startswith("written-by-the-candidate")]

    def test_unconfined_the_shell_runs(self):
        p = self.run_cli("run", *TINY, "--candidate", f"{FAULTS}:fault-run-shell")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.written(), ["written-by-the-candidate.shell"])

    def test_under_the_sandbox_each_call_is_stopped_and_named(self):
        cases = [  # (candidate, exit code, what the crash names)
            (f"{FAULTS}:fault-run-shell", 4, "the sandbox blocked execve"),
            (f"{FAULTS}:fault-load-shell", 4, "the sandbox blocked execve"),
            (f"{FAULTS}:fault-run-socket", 4, "the sandbox blocked socket(AF_INET)"),
            (f"{FAULTS}:fault-run-write", 4, f"the sandbox blocked open('{self.target}.written') for writing"),
            (f"{FAULTS}:fault-run-write-tmp", 0, ""),  # its own temp dir: allowed
            (f"py:{HOSTILE}:writes", 4, f"the sandbox blocked open('{os.path.join(self.tmp.name, 'written-by-the-candidate')}') for writing"),
            (f"py:{HOSTILE}:shell", 4, "the sandbox blocked os.system("),
            (f"py:{HOSTILE}:net", 4, "the sandbox blocked socket(family 2)"),
            (f"py:{HOSTILE}:tmp", 0, ""),
        ]
        for candidate, code, names in cases:
            with self.subTest(candidate=candidate):
                p = self.run_cli("run", *TINY, "--candidate", candidate, "--sandbox")
                self.assertEqual(p.returncode, code, p.stdout + p.stderr)
                self.assertIn(names, p.stdout)
                self.assertIn("sandbox: the candidate's processes run with no network", p.stdout)
                self.assertNotIn("sandbox: not applied", p.stdout)
                self.assertEqual(self.written(), [])

    def test_a_path_created_removed_renamed_or_linked_outside_the_temp_dir_is_stopped_and_named(self):
        # Landlock refuses each (EACCES) whatever the listener says; the listener names the path, so
        # a plugin that ignores the error still crashes the step, naming the call.
        cases = [  # (fault, what the crash names)
            ("fault-run-mkdir", f"the sandbox blocked mkdir('{self.target}.dir')"),
            ("fault-run-unlink", f"the sandbox blocked unlink('{self.target}')"),
            ("fault-run-rename", f"the sandbox blocked rename touching '{self.target}'"),
            ("fault-run-symlink", f"the sandbox blocked symlink('{self.target}.link')"),
            ("fault-run-link", f"the sandbox blocked link('{self.target}.hard')"),
            ("fault-run-mknod", f"the sandbox blocked mknod('{self.target}.fifo')"),
        ]
        for fault, names in cases:
            with self.subTest(fault=fault):
                with open(self.target, "w") as f:
                    f.write("kept")
                p = self.run_cli("run", *TINY, "--candidate", f"{FAULTS}:{fault}", "--sandbox")
                self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
                self.assertIn(names, p.stdout)
                self.assertEqual(self.written(), ["written-by-the-candidate"])  # nothing made, moved or gone
                with open(self.target) as f:
                    self.assertEqual(f.read(), "kept")
        # Unconfined, the same plugin does what it says: the test would see it.
        p = self.run_cli("run", *TINY, "--candidate", f"{FAULTS}:fault-run-mkdir")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("written-by-the-candidate.dir", self.written())

    def test_the_sandbox_dir_is_removed_after_sigterm_and_after_sigkill_by_the_next_run(self):
        # The candidate's temp dir is a scratch dir: removed by the handler on SIGTERM, and, since a
        # SIGKILL leaves it, by the next sandboxed run (its name carries the dead run's pid).
        tmpdir = os.path.join(self.tmp.name, "tmp")
        os.mkdir(tmpdir)
        env = dict(self.env, TMPDIR=tmpdir)
        sandbox_dirs = lambda: glob.glob(os.path.join(tmpdir, "driftscope-sandbox-*"))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with self.subTest(signal=sig.name):
                p = subprocess.Popen([DRIFTSCOPE, "run", *TINY, "--candidate", f"{FAULTS}:fault-load-hang",
                                      "--sandbox", "--timeout", "120"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                deadline = time.time() + 60
                while not sandbox_dirs() and time.time() < deadline:
                    time.sleep(0.1)
                self.assertTrue(sandbox_dirs(), "the sandboxed run made no driftscope-sandbox-* dir")
                time.sleep(0.5)  # the candidate's process is up and hanging in load()
                p.send_signal(sig)
                p.wait(timeout=60)
                if sig == signal.SIGTERM:
                    self.assertEqual(sandbox_dirs(), [])
                else:
                    self.assertEqual(len(sandbox_dirs()), 1)
                    q = subprocess.run([DRIFTSCOPE, "run", *TINY, "--candidate", f"py:{HOSTILE}:tmp", "--sandbox"],
                                       capture_output=True, text=True, timeout=600, env=env)
                    self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
                    self.assertRegex(q.stderr, r"note: removed .*driftscope-sandbox-\d+-\w+, left by driftscope process")
                    self.assertEqual(sandbox_dirs(), [])

    def test_verify_sandboxes_by_default(self):
        out = os.path.join(self.tmp.name, "verify.json")
        p = self.run_cli("verify", *TINY, "--candidate", f"{FAULTS}:fault-run-shell", "--decode-steps", "1",
                         "--json", out)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.written(), [])
        with open(out) as f:
            report = json.load(f)
        self.assertIn("the sandbox blocked execve", json.dumps(report["findings"]))

    def test_no_isolate_is_refused_under_the_sandbox(self):
        p = self.run_cli("run", *TINY, "--candidate", f"{FAULTS}:fault-run-shell", "--sandbox", "--no-isolate")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("cannot be combined with --no-isolate", p.stderr)
        self.assertEqual(self.written(), [])

    def test_driftscopes_own_candidates_run_unconfined_and_say_so(self):
        p = self.run_cli("run", *TINY, "--candidate", "simt", "--sandbox")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("sandbox: none: simt is Driftscope's own code", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
