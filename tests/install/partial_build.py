"""A build tree that built only `driftscope`, as `scripts/dev.sh demo` leaves it (docs/build.md):

- building `driftscope` compiles no nvcc object, no checked kernel, no kernel mutant and no kernel
  module;
- a run that needs the checked kernel module (--race-check) builds it on first use, says so, and
  passes;
- `driftscope candidates` opens and builds no mutant module; a `mutant:` run builds its own module
  (and no other mutant) on first use and fails where docs/mutants.md says;
- `cmake --install` of such a tree exits non-zero before writing anything, naming what is missing
  (the viewer) and the command that builds it.

A fresh build tree of this checkout is configured at BUILD_DIR, a folder of the checkout beside
`build/` (at the same depth, so that ccache, which hashes paths relative to the checkout, finds
the main build's objects and the tree costs little more than its links).

Usage: partial_build.py SOURCE_DIR BUILD_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = sys.argv.pop(1)
BUILD = sys.argv.pop(1)
WORK = tempfile.mkdtemp(prefix="ds-partial-")


def setUpModule():
    shutil.rmtree(BUILD, ignore_errors=True)
    subprocess.run(["cmake", "-S", SOURCE, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                   check=True, capture_output=True, timeout=600)
    subprocess.run(["cmake", "--build", BUILD, "--target", "driftscope"], check=True, capture_output=True,
                   timeout=1800)


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.rmtree(BUILD, ignore_errors=True)


def built(pattern):
    return glob.glob(os.path.join(BUILD, "**", pattern), recursive=True)


class PartialBuild(unittest.TestCase):
    def test_1_driftscope_alone_builds_no_nvcc_checked_or_module_code(self):
        self.assertEqual(built("*.cu.o"), [], "nvcc compiled something for driftscope")
        # CMake makes every target's .dir when it generates the tree: what counts is an object in one.
        self.assertEqual(built("ds_kernels_checked.dir/**/*.o"), [], "the checked flavour was compiled for driftscope")
        self.assertEqual(built("libdriftscope-kernels-*.so"), [])
        self.assertEqual(built("ds_mutant_*.dir/**/*.o"), [], "a kernel mutant was compiled for driftscope")
        self.assertEqual(built("libdriftscope-mutant-*.so"), [])

    def test_2_a_missing_kernel_module_is_built_on_first_use(self):
        p = subprocess.run([os.path.join(BUILD, "harness", "driftscope"), "run", "--model", "synthetic:qwen2-tiny",
                            "--candidate", "simt", "--race-check", "1"], cwd=WORK, capture_output=True,
                           text=True, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("building ds_kernels_checked_module on first use", p.stderr)
        self.assertEqual(len(built("libdriftscope-kernels-checked.so")), 1)

    def test_2b_listing_candidates_builds_no_mutant_and_a_mutant_run_builds_only_its_own(self):
        driftscope = os.path.join(BUILD, "harness", "driftscope")
        p = subprocess.run([driftscope, "candidates"], cwd=WORK, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("mutant:chain-add-idx", p.stdout)
        self.assertNotIn("on first use", p.stderr)
        self.assertEqual(built("libdriftscope-mutant-*.so"), [])
        # docs/mutants.md: chain-add-idx is first caught at residual_1 of layer 0 on qwen2-tiny.
        report = os.path.join(WORK, "mutant.json")
        p = subprocess.run([driftscope, "run", "--model", "synthetic:qwen2-tiny", "--candidate",
                            "mutant:chain-add-idx", "--json", report], cwd=WORK, capture_output=True, text=True,
                           timeout=900)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("building ds_mutant_chain_add_idx_module on first use", p.stderr)
        with open(report) as f:
            first = json.load(f)["first_failure"]
        self.assertEqual((first["stage"], first["layer"]), ("residual_1", 0), p.stdout)
        self.assertEqual([os.path.basename(f) for f in built("libdriftscope-mutant-*.so")],
                         ["libdriftscope-mutant-chain-add-idx.so"])

    def test_3_install_of_a_partial_build_writes_nothing_and_names_the_build_command(self):
        prefix = os.path.join(WORK, "prefix")
        p = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], capture_output=True, text=True,
                           timeout=300)
        out = p.stdout + p.stderr
        self.assertNotEqual(p.returncode, 0, out)
        self.assertIn("not built yet, so nothing was installed", out)
        self.assertIn("driftscope-view", out)
        self.assertIn(f"cmake --build {BUILD}", out)
        written = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs]
        self.assertEqual(written, [], "a failed install left files in the prefix")


if __name__ == "__main__":
    unittest.main()
