"""Writes past a file-size limit (`ulimit -f`, RLIMIT_FSIZE) as a user's shell sets it: SIGXFSZ left
at its default, which ends a process that does not ignore it with no word (exit 153 in a shell).
Every command must instead see the write fail (EFBIG) and say so: exit 2 naming the file (issue 49,
item 11). A report file that cannot be written whole is never left truncated (a CI step would parse
half a JSON as the verdict): the previous file stays as it was, or there is none; and the other
report files of the run are still written and named."""
import json
import os
import resource
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

DS = sys.argv.pop(1)
RUN = ["run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--decode-steps", "1"]


def ds(*args, limit=None):
    """Runs driftscope with RLIMIT_FSIZE `limit` bytes and SIGXFSZ as the shell leaves it."""
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([DS, *args], capture_output=True, text=True, timeout=300,
                       preexec_fn=apply if limit else None)
    return p.returncode, p.stdout, p.stderr


class FileLimits(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ds_fsize_")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_a_trace_past_the_limit_is_exit_2_naming_it_not_a_signal(self):
        for limit_kb in (8, 64, 200):
            with self.subTest(limit_kb=limit_kb):
                trace = self.path(f"t{limit_kb}.h5")
                rc, out, err = ds(*RUN, "--trace", trace, limit=limit_kb * 1024)
                self.assertEqual(rc, 2, f"exit {rc} (negative: killed by that signal)\n{out}{err}")
                self.assertIn(trace, err)

    def test_a_report_file_past_the_limit_is_exit_2_and_never_left_truncated(self):
        # (the file the limit stops, its previous content or None)
        for name, before in (("new.json", None), ("old.json", '{"verdict": "from last night"}\n')):
            with self.subTest(name):
                report = self.path(name)
                if before is not None:
                    with open(report, "w") as f:
                        f.write(before)
                rc, out, err = ds(*RUN, "--json", report, limit=4096)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(report, err)
                self.assertIn("File too large", err)
                if before is None:
                    self.assertFalse(os.path.exists(report), "a truncated report was left")
                else:
                    with open(report) as f:
                        self.assertEqual(f.read(), before)
                self.assertEqual([n for n in os.listdir(self.tmp.name) if ".tmp-" in n], [])

    def test_a_matrix_whose_json_fails_still_writes_and_names_its_junit_file(self):
        matrix = [*RUN, "--seed", "0", "--seed", "1"]
        # The sizes each file takes, so the limit can fall between them.
        big, small = self.path("sizes.json"), self.path("sizes.xml")
        rc, out, err = ds(*matrix, "--json", big, "--junit", small)
        self.assertEqual(rc, 0, out + err)
        json_size, junit_size = os.path.getsize(big), os.path.getsize(small)
        self.assertGreater(json_size, 2 * junit_size)
        report, junit = self.path("m.json"), self.path("m.xml")
        rc, out, err = ds(*matrix, "--json", report, "--junit", junit, limit=(json_size + junit_size) // 2)
        self.assertEqual(rc, 2, out + err)
        self.assertIn(f"{report}: cannot write the report file: File too large", err)
        self.assertIn(f"written: {junit}", err)
        self.assertFalse(os.path.exists(report))
        self.assertEqual(ET.parse(junit).getroot().tag, "testsuites")

    def test_a_json_that_fits_is_written_whole(self):
        report = self.path("ok.json")
        rc, out, err = ds(*RUN, "--json", report, limit=64 << 20)
        self.assertEqual(rc, 0, out + err)
        with open(report) as f:
            self.assertEqual(json.load(f)["exit_code"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
