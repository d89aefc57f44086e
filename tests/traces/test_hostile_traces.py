"""Traces are input like any other file: a corrupt or hostile one is exit 2 with a message naming
the file and what is wrong (the dataset, the field), never a signal, an overflow or a hang.

Each case below edits a good trace with h5py the way a corruption or a careless script could; the
last test flips bytes of a finished and of a killed trace at seeded random places and checks that
`report` always ends, promptly, with an exit code rather than a signal."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

DS = sys.argv.pop(1)
TIMEOUT = 60  # seconds: above the readers' own 20 s metadata deadline


def ds(*args):
    p = subprocess.run([DS, *args], capture_output=True, text=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr


def make_2d(f, name):
    """Replaces 1-D dataset `name` by a 2-D one of the same type holding twice the elements."""
    old = f[name][()]
    del f[name]
    f.create_dataset(name, data=np.stack([old, old], axis=1) if old.size else np.zeros((2, 2), old.dtype))


def set_run(f, edit):
    run = json.loads(f.attrs["run"])
    edit(run)
    f.attrs["run"] = json.dumps(run)


def set_summary_field(field, value):
    def edit(f):
        rows = f["summary"][()]
        rows[0][field] = value
        f["summary"][0] = rows[0]
    return edit


def set_result(edit):
    """Rewrites the /result JSON (uint8 bytes) through `edit`, which returns its new text."""
    def apply(f):
        text = edit(json.loads(bytes(f["result"][()]).decode()))
        del f["result"]
        f.create_dataset("result", data=np.frombuffer(text.encode(), np.uint8))
    return apply


def nested_exit_code(depth):
    def edit(result):
        result.pop("exit_code")
        return json.dumps(result)[:-1] + ', "exit_code": ' + "[" * depth + "]" * depth + "}"
    return edit


# (name, edit of an open h5py file, text the error must contain)
CASES = [
    ("2-D summary", lambda f: make_2d(f, "summary"), "dataset /summary has rank 2"),
    ("2-D result", lambda f: make_2d(f, "result"), "dataset /result has rank 2"),
    ("model name is a number", lambda f: set_run(f, lambda r: r["model"].update(name=42)),
     "model.name must be a string"),
    ("candidate is a list", lambda f: set_run(f, lambda r: r.update(candidate=[1, 2])),
     "candidate must be an object"),
    ("seed is a string", lambda f: set_run(f, lambda r: r.update(seed="zero")), "seed must be an integer"),
    ("summary status 200", set_summary_field("status", 200), "status = 200"),
    ("summary mode 9", set_summary_field("mode", 9), "mode = 9"),
    ("summary rank 99", set_summary_field("rank", 99), "rank = 99"),
    ("summary negative dimension", set_summary_field("shape", [-4, 1, 1, 1]), "shape"),
    ("summary shape product overflows", set_summary_field("shape", [2**40, 2**40, 1, 1]), "shape"),
    ("summary ref_offset beyond the pool", set_summary_field("ref_offset", 2**62), "lie outside /tensors/ref"),
    # Quoted in the message: the quote must not recurse 100000 levels (it overflowed the stack).
    ("result exit_code nested 100000 deep", set_result(nested_exit_code(100000)),
     "exit_code must be an integer from 0 to 4 (it is array [[[["),
]


def heap_objects(data):
    """(offset of its size field, size) of each object in the file's first global heap collection,
    where HDF5 keeps variable-length strings: the attributes `schema`, `run`, `capture_stages`..."""
    at = data.find(b"GCOL")
    assert at >= 0
    out, off = [], at + 16
    while True:
        index, _, _, size = struct.unpack_from("<HHIQ", data, off)
        if index == 0:  # the free space that ends the collection
            return out
        out.append((off + 8, size))
        off += 16 + (size + 7) // 8 * 8


# Lengths HDF5 trusts without a checksum, found by flipping bytes: (name, edit of the file's
# bytes, what the error says). Without ReadGuard, the first crashes HDF5 (SIGSEGV in H5HG_read),
# the second makes it loop forever.
def first_string_length(value):
    def edit(data):
        struct.pack_into("<Q", data, heap_objects(data)[0][0], value)
    return edit


def empty_string_length(value):
    def edit(data):
        field = next(f for f, size in heap_objects(data) if size == 0)  # capture_stages ""
        struct.pack_into("<Q", data, field, value)
    return edit


RAW_CASES = [
    ("heap string length 2^40", first_string_length(2**40), "the HDF5 library crashed reading this file"),
    ("heap empty string length 173", empty_string_length(173), "did not finish in time"),
]


class HostileTraces(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ds_hostile_")
        cls.good = os.path.join(cls.tmp.name, "good.h5")
        cls.killed = os.path.join(cls.tmp.name, "killed.h5")
        common = ["run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--prompt-tokens", "2"]
        rc, out, err = ds(*common, "-o", cls.good)
        assert rc == 0, out + err
        env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS="2")
        p = subprocess.run([DS, *common, "-o", cls.killed], env=env, capture_output=True, timeout=TIMEOUT)
        assert p.returncode == -9, p

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_each_edit_is_exit_2_naming_what_is_wrong(self):
        for name, edit, message in CASES:
            with self.subTest(name):
                path = os.path.join(self.tmp.name, name.replace(" ", "_") + ".h5")
                shutil.copy(self.good, path)
                with h5py.File(path, "r+") as f:
                    edit(f)
                # The tensor pools are read only when a row is re-judged under another tolerance.
                commands = ([["report", path, "--policy", "fixtures/policies/strict.yaml"]] if "pool" in name
                            else [["report", path], ["diff", self.good, path]])
                for args in commands:
                    rc, out, err = ds(*args)
                    self.assertEqual(rc, 2, f"{args}: {out}{err}")
                    self.assertIn(path, err)
                    self.assertIn(message, err)

    def test_a_row_naming_no_catalogue_stage_is_refused_by_every_reader(self):
        # Issue 49, item 14: an old or edited trace whose row names no stage, or one the catalogue
        # does not have, was printed as "first failing stage is  of layer 0". Every command reading
        # it refuses it: exit 2 naming the file, the row and the name.
        out_dir = os.path.join(self.tmp.name, "exported")
        commands = {  # command -> its arguments, given the trace
            "report": lambda t: ["report", t],
            "diff": lambda t: ["diff", self.good, t],
            "replay": lambda t: ["replay", t, "--step", "0", "--layer", "0", "--stage", "attn_norm",
                                 "--candidate", "cpu-f16"],
            "export": lambda t: ["export", t, "--format", "npy", "--out", out_dir],
        }
        cases = [  # (name, the stage written in row 0, what the error says of it)
            ("empty stage", b"", "the stage name is empty"),
            ("a renamed stage", b"attn_output", "stage 'attn_output' is not a stage of the catalogue"),
            ("a stage of 31 characters", b"x" * 31, f"stage '{'x' * 31}' is not a stage of the catalogue"),
        ]
        for name, stage, message in cases:
            path = os.path.join(self.tmp.name, name.replace(" ", "_") + ".h5")
            shutil.copy(self.good, path)
            with h5py.File(path, "r+") as f:
                set_summary_field("stage", stage)(f)
            for command, args in commands.items():
                with self.subTest(name, command=command):
                    rc, out, err = ds(*args(path))
                    self.assertEqual(rc, 2, f"{command}: {out}{err}")
                    self.assertIn(path, err)
                    self.assertIn("/summary row 0 (step 0, layer -1)", err)
                    self.assertIn(message, err)
                    self.assertNotIn("first failing stage is  of", out + err)

    def test_corrupt_heap_lengths_are_exit_2_not_a_signal_or_a_hang(self):
        for name, edit, message in RAW_CASES:
            with self.subTest(name):
                with open(self.good, "rb") as f:
                    data = bytearray(f.read())
                edit(data)
                path = os.path.join(self.tmp.name, name.replace(" ", "_") + ".h5")
                with open(path, "wb") as f:
                    f.write(data)
                p = subprocess.run([DS, "report", path], capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(path, p.stderr)
                self.assertIn(message, p.stderr)

    def test_flipped_bytes_never_crash_or_hang_a_reader(self):
        rng = random.Random(14)
        for source in (self.good, self.killed):
            with open(source, "rb") as f:
                data = f.read()
            for i in range(60):
                mutated = bytearray(data)
                # Metadata sits mostly in the first few KB: aim half the flips there.
                span = min(len(data), 8192) if i % 2 == 0 else len(data)
                for _ in range(rng.randint(1, 4)):
                    mutated[rng.randrange(span)] ^= 1 << rng.randrange(8)
                path = os.path.join(self.tmp.name, "flipped.h5")
                with open(path, "wb") as f:
                    f.write(mutated)
                try:
                    rc, out, err = ds("report", path)
                except subprocess.TimeoutExpired:
                    self.fail(f"report hung on {source} mutation {i}")
                self.assertIn(rc, (0, 1, 2), f"{source} mutation {i}: exit {rc}\n{out}{err}")


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    unittest.main(verbosity=2)
