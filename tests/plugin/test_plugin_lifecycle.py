"""Issue 49 item 13: however the harness ends, nothing the plugin started outlives it.

The plugin's load() spins at a full core, beside a helper it forked into a session of its own
(fault_plugin.cpp, fault-load-spin), under `run` and under `verify`. While both spin, the harness is
killed with SIGKILL, or its process group is sent SIGTERM. Within a few seconds no process has the
plugin mapped and neither pid the plugin wrote runs. verify's temporary directory is gone at once
after SIGTERM; after SIGKILL (no handler runs) the next start of verify removes it.
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from plugin_processes import alive, describe, plugin_processes

DRIFTSCOPE, FAULTS = sys.argv[1:3]
del sys.argv[1:]

COMMON = ["--model", "synthetic:qwen2-tiny", "--candidate", f"{FAULTS}:fault-load-spin", "--fill", "reference",
          "--decode-steps", "1"]
COMMANDS = {
    "run": ["run", *COMMON],
    # The plugin reports its pids in a file outside verify's sandbox, which would refuse the write
    # (docs/sandbox.md): what is tested here is the processes' end, not the sandbox.
    "verify": ["verify", *COMMON, "--checks", "check", "--no-sandbox"],
}
KILLS = {
    "SIGKILL to the harness": lambda p: os.kill(p.pid, signal.SIGKILL),
    "SIGTERM to its process group": lambda p: os.killpg(p.pid, signal.SIGTERM),
}
# How long the plugin may take to reach its load(), and what is left may take to end.
START_S, END_S = 60, 5


class HarnessKilledWhileThePluginSpins(unittest.TestCase):
    def test_nothing_of_the_plugin_outlives_the_harness(self):
        for command, args in COMMANDS.items():
            for how, kill in KILLS.items():
                with self.subTest(command=command, kill=how):
                    self.check_case(args, kill, scratch=command == "verify", sigkill="SIGKILL" in how)

    def check_case(self, args, kill, scratch, sigkill):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        pid_file = os.path.join(tmp.name, "spin.pid")
        temp_root = os.path.join(tmp.name, "tmp")  # the harness's temporary directory, ours alone
        os.mkdir(temp_root)
        env = dict(os.environ, DS_FAULT_PID_FILE=pid_file, TMPDIR=temp_root)
        log = os.path.join(tmp.name, "harness.log")
        with open(log, "w") as out:
            p = subprocess.Popen([DRIFTSCOPE, *args], env=env, start_new_session=True, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + START_S
            while not os.path.exists(pid_file) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if not os.path.exists(pid_file):
                with open(log) as f:
                    self.fail(f"the plugin never reached load(): exit {p.poll()}\n{f.read()[-3000:]}")
            with open(pid_file) as f:
                spinning = [int(x) for x in f.read().split()]
            self.assertTrue(all(alive(pid) for pid in spinning), describe(spinning))
            kill(p)
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        deadline = time.monotonic() + END_S
        while (plugin_processes(FAULTS) or any(map(alive, spinning))) and time.monotonic() < deadline:
            time.sleep(0.05)
        left_running = plugin_processes(FAULTS)
        described = describe(left_running)
        for pid in left_running:  # what a failure left does not stay on the machine
            os.kill(pid, signal.SIGKILL)
        self.assertEqual(described, [])
        self.assertEqual([pid for pid in spinning if alive(pid)], [], describe(spinning))
        if not scratch:
            return
        left = glob.glob(os.path.join(temp_root, "driftscope-verify-*"))
        if not sigkill:
            self.assertEqual(left, [], "SIGTERM left verify's temporary directory")
            return
        self.assertEqual(len(left), 1, f"verify's temporary directory, named with its pid: {left}")
        self.assertIn(f"-{p.pid}-", os.path.basename(left[0]))
        # The next start of verify removes it (here one that stops at once on a bad model).
        q = subprocess.run([DRIFTSCOPE, "verify", "--model", "synthetic:no-such-preset"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(q.returncode, 2, q.stderr)
        self.assertFalse(os.path.exists(left[0]), q.stderr)
        self.assertIn(left[0], q.stderr)


if __name__ == "__main__":
    unittest.main()
