"""Where a long command is: `run`, `check` and `verify` with --progress and no terminal (a CI log)
print a line when each part begins (and one every 10 s while it runs); without --progress and no
terminal they print none.

Usage: test_progress_cli.py DRIFTSCOPE
"""
import re
import subprocess
import sys
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "build/harness/driftscope"
PROGRESS = re.compile(r"^(\[\d+/\d+\] .+|run|check: .+|.+): (starting|loading weights|gates|starting the candidate|"
                      r"\[[# ]+\] \d+/\d+ layers).*elapsed", re.M)

CASES = [
    ("run", ["run", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16"], "run: starting"),
    # Part 1, memory errors, is skipped for cpu-f16 (no checked kernels): both modes is the first to run.
    ("check", ["check", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16"], "] both modes: starting"),
    ("verify", ["verify", "--model", "synthetic:qwen2-tiny", "--candidate", "cpu-f16", "--checks", "check"],
     "check: both modes: starting"),
]


class ProgressLines(unittest.TestCase):
    def test_lines_only_when_asked_without_a_terminal(self):
        for name, args, first in CASES:
            with self.subTest(name):
                asked = subprocess.run([DRIFTSCOPE, *args, "--progress"], capture_output=True, text=True,
                                       timeout=600, stdin=subprocess.DEVNULL)
                self.assertEqual(asked.returncode, 0, asked.stdout + asked.stderr)
                self.assertIn(first, asked.stderr)
                self.assertTrue(PROGRESS.search(asked.stderr), asked.stderr)
                self.assertNotIn("\r", asked.stderr, "a log gets lines, not a redrawn line")
                quiet = subprocess.run([DRIFTSCOPE, *args], capture_output=True, text=True, timeout=600,
                                       stdin=subprocess.DEVNULL)
                self.assertEqual(quiet.returncode, 0, quiet.stdout + quiet.stderr)
                self.assertFalse(PROGRESS.search(quiet.stderr), quiet.stderr)


if __name__ == "__main__":
    unittest.main()
