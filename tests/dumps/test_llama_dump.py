"""tools/llama_dump, the shipped llama.cpp dumper, where it is built (CMake found an installed
llama.cpp): its argument checks, and on each peer model the installed llama.cpp can load, what it
writes is what `--candidate dump:` reads: step0..3, tokens.npy, greedy.txt, every file float32
in the shape the peer folder's dump of the same model and name has (its llama.cpp at
0c1e57098), and the shipped mapping of the family judges it (exit 0, nothing missing) with the
f32 recipe (--kv-type f32 --flash-attn off).

Usage: test_llama_dump.py DRIFTSCOPE LLAMA_DUMP PEERS (LLAMA_DUMP empty: not built, exit 77)
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

DRIFTSCOPE = sys.argv.pop(1) if len(sys.argv) > 1 else "driftscope"
LLAMA_DUMP = sys.argv.pop(1) if len(sys.argv) > 1 else ""
PEERS = sys.argv.pop(1) if len(sys.argv) > 1 else "../shared/peers/llama.cpp"

# (model under models/, the peer dump of it, made with the same settings)
CASES = [
    ("llama-tiny.tok.gguf", "llama-all"),
    ("qwen2-tiny.tok.gguf", "qwen2-all"),
    ("qwen3-tiny.tok.gguf", "qwen3-all"),
    ("qwen35-tiny.gguf", "qwen35-all"),
    ("llama256.gguf", "llama256"),
]


def dump(model, out, *extra):
    return subprocess.run([LLAMA_DUMP, "--model", os.path.join(PEERS, "models", model), "--prompt", "1,5,9,42,7",
                           "--steps", "3", "--out", out, *extra], capture_output=True, text=True, timeout=300)


class Arguments(unittest.TestCase):
    BAD = [
        ("no model", ["--prompt", "1,2", "--out", "x"], "--model: required"),
        ("a bad kv type", ["--model", "m", "--prompt", "1", "--out", "x", "--kv-type", "q8_0"], "--kv-type q8_0"),
        ("a bad flash-attn", ["--model", "m", "--prompt", "1", "--out", "x", "--flash-attn", "yes"],
         "--flash-attn yes"),
        ("a bad token", ["--model", "m", "--prompt", "1,x", "--out", "x"], "--prompt x"),
        ("an unknown flag", ["--model", "m", "--prompt", "1", "--out", "x", "--temp", "1"], "unknown argument --temp"),
    ]

    def test_bad_arguments_are_exit_2_naming_them(self):
        for case, args, needle in self.BAD:
            with self.subTest(case):
                p = subprocess.run([LLAMA_DUMP, *args], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(needle, p.stderr)
                self.assertIn("usage: llama_dump", p.stderr)

    def test_help_is_exit_0(self):
        p = subprocess.run([LLAMA_DUMP, "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertIn("--kv-type f32 --flash-attn off", p.stdout)


@unittest.skipUnless(os.path.isdir(PEERS), f"no llama.cpp peer folder at {PEERS}")
class PeerModels(unittest.TestCase):
    def test_what_it_writes_is_what_dump_reads(self):
        dumped = 0
        for model, peer in CASES:
            with self.subTest(model), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "d")
                p = dump(model, out, "--kv-type", "f32", "--flash-attn", "off")
                if p.returncode == 1 and "cannot load the model" in p.stderr:
                    self.skipTest(f"{model}: this llama.cpp cannot load it (an architecture newer than it)")
                self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
                self.assertEqual(np.load(os.path.join(out, "tokens.npy")).tolist(), [1, 5, 9, 42, 7])
                # Same model, same f32 settings: the tokens llama.cpp chose (0c1e57098 for the peers).
                with open(os.path.join(out, "greedy.txt")) as f, \
                        open(os.path.join(PEERS, "dumps", peer, "greedy.txt")) as g:
                    self.assertEqual(f.read().strip(), g.read().strip())
                for step in range(4):
                    for name in os.listdir(os.path.join(out, f"step{step}")):
                        self.assertEqual(np.load(os.path.join(out, f"step{step}", name)).dtype, np.float32, name)
                # The shipped mapping's names are those of llama.cpp 0c1e57098: another version
                # may name its graph otherwise (an older one: inp_embd for embd).
                mapped = mapped_files(family_of(peer))
                absent = [f for s in range(4) for f in mapped(s) if not os.path.exists(os.path.join(out, f))]
                if absent:
                    self.skipTest(f"{model}: this llama.cpp names its graph otherwise than the shipped "
                                  f"mapping (no {absent[0]}); the files and greedy tokens were checked")
                for step in range(4):
                    for f in mapped(step):
                        self.assertEqual(np.load(os.path.join(out, f)).shape,
                                         np.load(os.path.join(PEERS, "dumps", peer, f)).shape, f)
                p = subprocess.run([DRIFTSCOPE, "run", "--model", os.path.join(PEERS, "models", model), "--candidate",
                                    f"dump:{out}", "--decode-steps", "3"], capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
                self.assertNotIn("MISSING", p.stdout)


def family_of(peer):
    return {"llama256": "llama"}.get(peer, peer.split("-")[0])


def mapped_files(family):
    """step -> the files the shipped llama.cpp mapping of `family` names (layers 0 and 1)."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(root, "fixtures", "dumps", f"llama.cpp-{family}.yaml")) as f:
        patterns = sorted(set(re.findall(r'"(step\{step\}/[^"]+\.npy)"', f.read())))
    return lambda step: sorted({p.replace("{step}", str(step)).replace("{layer}", str(layer))
                                for p in patterns for layer in (0, 1)})


if __name__ == "__main__":
    if not LLAMA_DUMP:
        print("SKIP: no llama.cpp installed: set CMAKE_PREFIX_PATH to build tools/llama_dump")
        sys.exit(77)
    unittest.main()
