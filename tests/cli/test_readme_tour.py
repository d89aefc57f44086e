"""The README's quick tour, run top to bottom as written: every command of its first ```sh block
after "## Quick tour" (continuation lines joined), in a fresh directory holding only `build` (the
build tree), `fixtures` and `examples` (the checkout's), so the tour cannot drift from what the
program does.

What each command must show is what the README says of it, in the comment lines right above it
or at its end (a comment block speaks of the one command under it):
- "exit N" is its exit code (no such words: exit 0);
- every "double-quoted text" is text its output must contain, where "..." inside the quotes stands
  for anything in between.
The viewer is interactive: its commands run headless under xvfb-run with --screenshot added (the
window the user would see, rendered to a PNG), and must exit 0.

Usage: test_readme_tour.py DRIFTSCOPE README [--only SUBSTRING]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "build/harness/driftscope"
README = sys.argv.pop(1) if len(sys.argv) > 1 else "README.md"
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(DRIFTSCOPE)))
SOURCE = os.path.dirname(os.path.abspath(README))


class Step:
    def __init__(self, command, notes):
        self.command = command
        self.notes = notes  # the comment text that speaks of it
        m = re.findall(r"\bexit (\d)\b", notes)
        self.exit_code = int(m[-1]) if m else 0
        self.claims = re.findall(r'"([^"]+)"', notes)


def tour_steps(readme_text):
    """The quick tour's commands, each with the comments that speak of it."""
    section = readme_text.split("## Quick tour", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    steps, notes, pending = [], [], ""
    for raw in block.splitlines():
        line = raw.rstrip()
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        stripped = line.strip()
        if not stripped:
            notes = []  # a blank line ends the comment block a command follows
            continue
        if stripped.startswith("#"):
            notes.append(stripped[1:].strip())
            continue
        command, _, trailing = stripped.partition("   #")
        if not trailing:
            command, _, trailing = stripped.partition("  #")
        steps.append(Step(command.strip(), " ".join(notes + [trailing.strip()])))
        notes = []  # a comment block speaks of the one command under it; the next has its own
    return steps


def claim_found(claim, text):
    at = 0
    for piece in claim.split("..."):
        piece = piece.strip()
        if not piece:
            continue
        found = text.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


class QuickTour(unittest.TestCase):
    def test_every_command_does_what_the_readme_says(self):
        with open(README) as f:
            steps = tour_steps(f.read())
        self.assertGreater(len(steps), 20, "the quick tour's commands were not found")
        only = os.environ.get("DS_TOUR_ONLY", "")
        with tempfile.TemporaryDirectory(prefix="ds-tour-") as home:
            os.symlink(BUILD, os.path.join(home, "build"))
            os.symlink(os.path.join(SOURCE, "fixtures"), os.path.join(home, "fixtures"))
            os.symlink(os.path.join(SOURCE, "examples"), os.path.join(home, "examples"))
            for step in steps:
                if only and only not in step.command:
                    continue
                command = step.command
                if command.startswith("build/viewer/driftscope-view"):
                    if not shutil.which("xvfb-run"):
                        continue
                    command = (f"xvfb-run -a -s '-screen 0 1280x800x24' {command} --screenshot "
                               f"{os.path.join(home, 'tour-view.png')}")
                with self.subTest(command=step.command):
                    start = time.time()
                    p = subprocess.run(command, shell=True, cwd=home, capture_output=True, text=True,
                                       timeout=900)
                    out = p.stdout + p.stderr
                    print(f"[{time.time() - start:6.1f} s] exit {p.returncode}: {step.command}", flush=True)
                    self.assertEqual(p.returncode, step.exit_code,
                                     f"{step.command}\nthe README says exit {step.exit_code}\n{out[-3000:]}")
                    for claim in step.claims:
                        self.assertTrue(claim_found(claim, out),
                                        f"{step.command}\nthe README says it prints \"{claim}\"\n{out[-3000:]}")


if __name__ == "__main__":
    unittest.main()
