"""A FIFO, a device or a directory where a file is expected is refused up front: exit 2, naming the
path and what it is, in under a second. Before, a FIFO nobody writes blocked open(2) for ever and
/dev/zero was read until memory ran out (issue 32, item 5). Every text file read whole (a policy, a
prompt, a mapping, a config.json) is refused from its size over a bound, before it is read; model
and tensor files are bounded by their headers, which must not claim more than the file holds.

One case per (argument x kind of special file): each argument says where the special file goes
and the command line that reads it."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

DS = sys.argv.pop(1)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODELS = os.path.join(ROOT, "fixtures", "models")
PRESET = "synthetic:qwen2-tiny"


def ds(*args):
    start = time.monotonic()
    p = subprocess.run([DS, *args], capture_output=True, timeout=5)
    return p.returncode, p.stderr.decode(errors="replace"), time.monotonic() - start


def make_special(kind, path):
    """Makes PATH a KIND of file; a character device is a link to /dev/zero (stat follows links)."""
    if kind == "FIFO":
        os.mkfifo(path)
    elif kind == "character device":
        os.symlink("/dev/zero", path)
    else:
        os.mkdir(path)


KINDS = ["FIFO", "character device", "directory"]


class Fixtures:
    """A trace and its exported dumps (npy and safetensors), made once, copied per case."""

    def __init__(self, tmp):
        self.trace = os.path.join(tmp, "good.h5")
        self.npy_dump = os.path.join(tmp, "npy-dump")
        self.st_dump = os.path.join(tmp, "st-dump")
        steps = [
            ["run", "--model", PRESET, "--candidate", "cpu-f16", "--prompt-tokens", "4", "--trace", self.trace],
            ["export", self.trace, "--format", "npy", "--out", self.npy_dump],
            ["export", self.trace, "--format", "safetensors", "--out", self.st_dump],
        ]
        for args in steps:
            p = subprocess.run([DS, *args], capture_output=True, timeout=120)
            assert p.returncode == 0, (args, p.stderr.decode(errors="replace"))


# --- Each argument: where its special file goes, and the command line that reads it --------------
# where(case dir, fixtures) -> the path to make special (a fixture copied into the case dir when the
# file lives inside one); argv(path, case dir, fixtures) -> the command.


def named(name):
    return lambda d, fx: os.path.join(d, name)


def member_of(source, member):
    """A file inside a copy of a fixture directory (a model's config.json, a dump's member)."""

    def where(d, fx):
        shutil.copytree(source(fx), os.path.join(d, "copy"))
        return os.path.join(d, "copy", member)

    return where


def npz_member(d, fx):
    """A dump whose mapping reads stage q from an .npz archive."""
    shutil.copytree(fx.npy_dump, os.path.join(d, "copy"))
    mapping = os.path.join(d, "copy", "mapping.yaml")
    with open(mapping) as f:
        text = f.read().replace("q: step{step}/layer{layer}.q.npy", "q: q.npz:layer{layer}")
    with open(mapping, "w") as f:
        f.write(text)
    return os.path.join(d, "copy", "q.npz")


def gpt2(fx):
    return os.path.join(MODELS, "gpt2-tiny")


def run_model(path, d, fx):
    return ["run", "--model", path, "--candidate", "cpu-f16"]


def run_copied_model(path, d, fx):
    return ["run", "--model", os.path.join(d, "copy"), "--candidate", "cpu-f16"]


def run_copied_dump(path, d, fx):
    return ["run", "--model", PRESET, "--candidate", "dump:" + os.path.join(d, "copy")]


def run_with(*flag):
    return lambda path, d, fx: ["run", "--model", PRESET, "--candidate", "cpu-f16", *flag, path]


ARGUMENTS = {
    "run --model FILE": (named("model.gguf"), run_model),
    "gate --model FILE": (named("model.gguf"), lambda path, d, fx: ["gate", "--model", path]),
    "run --model DIR: config.json": (member_of(gpt2, "config.json"), run_copied_model),
    "run --model DIR: model.safetensors": (member_of(gpt2, "model.safetensors"), run_copied_model),
    "run --policy": (named("policy.yaml"), run_with("--policy")),
    "run --tokens @FILE": (named("tokens.txt"),
                           lambda path, d, fx: run_with("--tokens")("@" + path, d, fx)),
    "run --candidate dump:DIR:MAPPING.yaml": (
        named("mapping.yaml"),
        lambda path, d, fx: ["run", "--model", PRESET, "--candidate", f"dump:{fx.npy_dump}:{path}"]),
    "dump .npy member": (member_of(lambda fx: fx.npy_dump, "step0/layer0.q.npy"), run_copied_dump),
    "dump .safetensors member": (member_of(lambda fx: fx.st_dump, "step0.safetensors"), run_copied_dump),
    "dump .npz member": (npz_member, run_copied_dump),
    "run --candidate PLUGIN.so": (named("plugin.so"),
                                  lambda path, d, fx: ["run", "--model", PRESET, "--candidate", path]),
    "report TRACE": (named("trace.h5"), lambda path, d, fx: ["report", path]),
    "report --policy": (named("policy.yaml"), lambda path, d, fx: ["report", fx.trace, "--policy", path]),
    "diff BASE CURRENT": (named("trace.h5"), lambda path, d, fx: ["diff", fx.trace, path]),
    "replay TRACE": (named("trace.h5"), lambda path, d, fx: [
        "replay", path, "--step", "0", "--layer", "0", "--stage", "q", "--candidate", "cpu-f16"]),
    "merge TRACE": (named("trace.h5"),
                    lambda path, d, fx: ["merge", fx.trace, path, "-o", os.path.join(d, "merged.h5")]),
    "export TRACE": (named("trace.h5"),
                     lambda path, d, fx: ["export", path, "--format", "npy", "--out", os.path.join(d, "out")]),
    "export --mapping": (named("mapping.yaml"), lambda path, d, fx: [
        "export", fx.trace, "--mapping", path, "--out", os.path.join(d, "out")]),
}

# A directory is a model format of its own (an HF checkpoint): --model names what it lacks instead.
DIRECTORY_MESSAGE = {"run --model FILE": "directory without config.json",
                     "gate --model FILE": "directory without config.json"}

# The same, given /dev/zero itself rather than a link to it.
DEV_ZERO = ["run --model FILE", "run --policy", "run --tokens @FILE", "report TRACE", "diff BASE CURRENT"]

# Sparse files (truncate), so the cases cost no disk or time: (argument, the bound named).
BIG = 70 * 1000 * 1000
OVERSIZED = [
    ("run --policy", "16 MiB"),
    ("report --policy", "16 MiB"),
    ("run --tokens @FILE", "64 MiB"),
    ("run --model DIR: config.json", "16 MiB"),
    ("run --candidate dump:DIR:MAPPING.yaml", "16 MiB"),
    ("export --mapping", "16 MiB"),
]

# Files bounded by their headers, cut in half: the header claims more than the file holds.
SHORT = [
    ("GGUF", "run --model FILE", os.path.join(MODELS, "qwen2-tiny.gguf"), "beyond the data section"),
    ("model safetensors", "run --model DIR: model.safetensors", None, "outside the"),
    ("dump .npy", "dump .npy member", None, "the file holds"),
    ("dump safetensors", "dump .safetensors member", None, "outside the"),
]


class SpecialFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ds_special_")
        cls.fx = Fixtures(cls.tmp)
        cls.cases = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def prepare(self, argument):
        """A fresh case directory: the path the argument reads, and the command line."""
        SpecialFiles.cases += 1
        d = os.path.join(self.tmp, f"case{self.cases}")
        os.mkdir(d)
        where, argv = ARGUMENTS[argument]
        path = where(d, self.fx)
        return path, argv(path, d, self.fx)

    def assert_refused(self, argv, *messages):
        rc, err, took = ds(*argv)
        self.assertEqual(rc, 2, err)
        for m in messages:
            self.assertIn(m, err)
        self.assertLess(took, 1.0, "refused up front, not after reading")

    def test_special_files_are_refused_naming_the_path_and_kind(self):
        for argument in ARGUMENTS:
            for kind in KINDS:
                with self.subTest(f"{argument}: a {kind}"):
                    path, argv = self.prepare(argument)
                    if os.path.lexists(path):
                        os.remove(path)
                    make_special(kind, path)
                    message = f"{path}: is a {kind}, not a regular file"
                    if kind == "directory" and argument in DIRECTORY_MESSAGE:
                        message = f"{path}: {DIRECTORY_MESSAGE[argument]}"
                    self.assert_refused(argv, message)

    def test_dev_zero_itself_is_refused(self):
        for argument in DEV_ZERO:
            with self.subTest(argument):
                d = os.path.join(self.tmp, "dev-zero")
                os.makedirs(d, exist_ok=True)
                self.assert_refused(ARGUMENTS[argument][1]("/dev/zero", d, self.fx),
                                    "/dev/zero: is a character device, not a regular file")

    def test_oversized_text_files_are_refused_naming_the_bound(self):
        for argument, bound in OVERSIZED:
            with self.subTest(argument):
                path, argv = self.prepare(argument)
                with open(path, "wb") as f:
                    f.truncate(BIG)
                self.assert_refused(argv, f"{path}: {BIG} bytes, more than the {bound}")

    def test_headers_claiming_more_than_the_file_holds_are_refused(self):
        for name, argument, source, message in SHORT:
            with self.subTest(name):
                path, argv = self.prepare(argument)
                if source is not None:
                    shutil.copyfile(source, path)
                with open(path, "r+b") as f:
                    f.truncate(os.path.getsize(path) // 2)
                self.assert_refused(argv, path, message)


if __name__ == "__main__":
    unittest.main(verbosity=2)
