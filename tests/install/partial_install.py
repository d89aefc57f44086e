"""`cmake --install` of a build tree that built only part of what it installs (what the demo
leaves: the programs it ran, not the viewer): exit non-zero, naming the missing files and the
command that builds them, and the prefix left empty rather than half written.

A fresh build tree of this checkout is configured and only the SIMT rewrite tool (installed
first, and small) is built in it, so every later install rule has something missing.

Usage: partial_install.py SOURCE_DIR WORK_DIR
"""
import os
import shutil
import subprocess
import sys
import unittest

SOURCE = sys.argv.pop(1)
WORK = sys.argv.pop(1)


class PartialInstall(unittest.TestCase):
    def test_install_of_a_partial_build_writes_nothing_and_names_the_build_command(self):
        shutil.rmtree(WORK, ignore_errors=True)
        build, prefix = os.path.join(WORK, "build"), os.path.join(WORK, "prefix")
        subprocess.run(["cmake", "-S", SOURCE, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                       check=True, capture_output=True, timeout=600)
        subprocess.run(["cmake", "--build", build, "--target", "driftscope_simt_rewrite"], check=True,
                       capture_output=True, timeout=600)
        p = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                           timeout=300)
        out = p.stdout + p.stderr
        self.assertNotEqual(p.returncode, 0, out)
        self.assertIn("not built yet, so nothing was installed", out)
        self.assertIn("driftscope-view", out)
        self.assertIn(f"cmake --build {build}", out)
        written = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs] if os.path.isdir(prefix) else []
        self.assertEqual(written, [], "a failed install left files in the prefix")
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
