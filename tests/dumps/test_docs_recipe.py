"""docs/dumps.md's worked example on real llama.cpp dumps, run as written: the fenced block after
the marker `<!-- tests/dumps/test_docs_recipe.py runs this block as written -->`, line by line from
a scratch directory standing for the repository root. `build/harness/driftscope` is the driftscope
under test, `build/tools/llama_dump` the dumper where it is built; where it is not, the peer
folder's dump of the same name (what that line wrote with a real llama.cpp) is copied to its
`--out`. Each `# TEXT` line is output the command before it must print; every command must exit 0.

Usage: test_docs_recipe.py DRIFTSCOPE PEERS [LLAMA_DUMP] (no peer folder: exit 77)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

DRIFTSCOPE = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "driftscope"
PEERS = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "../shared/peers/llama.cpp"
LLAMA_DUMP = sys.argv.pop(1) if len(sys.argv) > 1 else ""
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MARKER = "<!-- tests/dumps/test_docs_recipe.py runs this block as written -->"


def recipe_block():
    with open(os.path.join(ROOT, "docs", "dumps.md")) as f:
        text = f.read()
    at = text.index(MARKER)
    m = re.compile(r"```sh\n(.*?)```", re.S).search(text, at)
    return m.group(1).splitlines()


def steps_of(lines):
    """[(command, [expected output])], with the `P=...` assignment applied."""
    env, steps = {}, []
    for line in lines:
        if not line.strip():
            continue
        if line.startswith("# "):
            steps[-1][1].append(line[2:])
        elif re.match(r"^[A-Z]+=\S+$", line):
            name, value = line.split("=", 1)
            env[name] = value
        else:
            steps.append((line, []))
    return env, steps


class DocsRecipe(unittest.TestCase):
    def test_the_worked_example_passes_as_written(self):
        env, steps = steps_of(recipe_block())
        self.assertEqual(env, {"P": "../shared/peers/llama.cpp"}, "the block's peer folder")
        self.assertTrue(any("driftscope run" in c for c, _ in steps))
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "build", "harness"))
            os.makedirs(os.path.join(root, "build", "tools"))
            os.symlink(DRIFTSCOPE, os.path.join(root, "build", "harness", "driftscope"))
            if LLAMA_DUMP:
                os.symlink(os.path.abspath(LLAMA_DUMP), os.path.join(root, "build", "tools", "llama_dump"))
            # The block's P, relative to the repository root, is the peer folder under test.
            peers_link = os.path.join(root, "peers")
            os.symlink(PEERS, peers_link)
            for command, expected in steps:
                with self.subTest(command):
                    argv = shlex.split(command.replace("$P", "peers"))
                    if argv[0] == "build/tools/llama_dump":
                        out = argv[argv.index("--out") + 1]
                        p = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300) \
                            if LLAMA_DUMP else None
                        # An installed llama.cpp older than the model's architecture cannot load it:
                        # the peer folder's dump stands in, as without the dumper.
                        if p is None or (p.returncode == 1 and "cannot load the model" in p.stderr):
                            shutil.rmtree(os.path.join(root, out), ignore_errors=True)
                            shutil.copytree(os.path.join(PEERS, "dumps", out), os.path.join(root, out))
                        else:
                            self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
                        continue
                    # A shipped mapping names itself by its path in the source tree, as it is
                    # compiled in: the same wherever the command runs.
                    p = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
                    for text in expected:
                        self.assertIn(text, p.stdout + p.stderr)


if __name__ == "__main__":
    if not os.path.isdir(PEERS):
        print(f"SKIP: the llama.cpp peer folder {PEERS} is absent (DRIFTSCOPE_LLAMACPP_PEERS)")
        sys.exit(77)
    unittest.main()
