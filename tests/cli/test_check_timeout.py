"""Issue 49 item 7: `check` and `verify` take run's --timeout and give it to every part. A kernel
that never returns (selftest:hang-layer1) with --timeout 2 costs each part about 2 s, so the
verdict (exit 4, naming the timeout in every part it crashed) comes in well under one part's
default of 600 s; a bad value is exit 2 naming the flag."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"

COMMON = ["--model", "synthetic:qwen2-tiny", "--decode-steps", "1"]
# Far below what one hanging part costs under the default --timeout (600 s).
BOUND_S = 240
HUNG = "hung: no answer within --timeout 2 s"


class Timeout(unittest.TestCase):
    def run_cli(self, *args):
        p = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=900)
        return p

    def test_a_hanging_kernel_gets_a_verdict_within_the_bound(self):
        # Both at once: each mostly waits out its timeouts.
        with tempfile.TemporaryDirectory() as tmp:
            running = {}
            for command in ("check", "verify"):
                out = os.path.join(tmp, f"{command}.json")
                log = open(os.path.join(tmp, f"{command}.log"), "w+")
                self.addCleanup(log.close)
                p = subprocess.Popen([DRIFTSCOPE, command, *COMMON, "--candidate", "selftest:hang-layer1",
                                      "--timeout", "2", "--json", out], stdout=log, stderr=subprocess.STDOUT)
                running[command] = (p, out, log, time.monotonic())
            for command, (p, out, log, start) in running.items():
                with self.subTest(command=command):
                    p.wait(timeout=900)
                    seconds = time.monotonic() - start
                    log.seek(0)
                    text = log.read()
                    self.assertEqual(p.returncode, 4, text[-3000:])
                    self.assertLess(seconds, BOUND_S, text[-3000:])
                    with open(out) as f:
                        verdict = json.load(f)
                    # The real-widths part's preset has one layer: nothing there reaches layer 1's hang.
                    if command == "check":
                        ran = [part for part in verdict["parts"] if not part["skipped"]]
                        self.assertTrue(ran)
                        for part in ran:
                            if part["name"] == "real widths":
                                self.assertEqual(part["exit_code"], 0, part)
                                continue
                            self.assertIn(HUNG, part["verdict"], part)
                    else:
                        self.assertEqual([f["kind"] for f in verdict["findings"]], ["crash"], verdict["findings"])
                        self.assertIn(HUNG, verdict["findings"][0]["evidence"]["verdict"])
                        self.assertTrue(all(HUNG in part["verdict"] for part in verdict["check_parts"]
                                            if not part["skipped"] and part["name"] != "real widths"),
                                        verdict["check_parts"])

    def test_a_bad_timeout_is_exit_2_naming_the_flag(self):
        for command in ("check", "verify"):
            for value in ("-1", "soon"):
                with self.subTest(command=command, value=value):
                    p = self.run_cli(command, *COMMON, "--timeout", value)
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn("--timeout", p.stderr)


if __name__ == "__main__":
    unittest.main()
