"""A full disk, made with RLIMIT_FSIZE (a write past the limit fails with EFBIG, as on a full disk;
SIGXFSZ ignored so write() returns the error), cut at many points of a run and of a merge.

- run: exit 2 naming the trace; the trace opens; every row it shows is a row of the same run on a
  roomy disk, its tensors identical (no phantom all-zero row, no zero tensor judged PASS); report
  says INCOMPLETE and that the write failed, exit 2, never PASS.
- rows a failed write left past /written (appended by hand here) are never read.
- merge: exit 2 naming the output, not an input; no OUT.partial; an existing OUT is left as it was.
- a stored exit code that is not an integer: report exits 2 naming the field and the trace."""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

DS = sys.argv.pop(1)
RUN = ["run", "-m", "synthetic:qwen2-tiny", "--decode-steps", "2"]
CANDIDATES = ["cpu-f16", "mutant:chain-add-idx"]  # all pass; failing stages with captured inputs
LIMITS_KB = [8, 60, 150, 200, 260, 400, 600, 900, 1200]


def small_disk(limit_bytes):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return apply


def ds(*args, limit=None):
    p = subprocess.run([DS, *args], capture_output=True, text=True, timeout=120,
                       preexec_fn=small_disk(limit) if limit else None)
    return p.returncode, p.stdout, p.stderr


def rows(path):
    """(key, ref tensor, cand tensor) of every row a reader may show: those before /written."""
    out = []
    with h5py.File(path, "r", swmr=True) as f:
        s = f["summary"]
        n = min(s.shape[0], int(f["written"][0]))
        for r in s[:n]:
            key = (int(r["step"]), int(r["layer"]), r["stage"].decode(), int(r["mode"]), int(r["status"]))
            numel = int(np.prod(r["shape"][:r["rank"]]))
            ten = [f[pool][r[off]:r[off] + numel].copy() if r[off] >= 0 else None
                   for pool, off in (("tensors/ref", "ref_offset"), ("tensors/cand", "cand_offset"))]
            out.append((key, *ten))
    return out


class DiskFull(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ds_diskfull_")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_a_cut_run_keeps_only_rows_really_written(self):
        for cand in CANDIDATES:
            full = self.path(f"full-{cand.replace(':', '_')}.h5")
            rc, out, err = ds(*RUN, "-c", cand, "-o", full)
            self.assertIn(rc, (0, 1), out + err)
            whole = rows(full)
            for kb in LIMITS_KB:
                with self.subTest(candidate=cand, limit_kb=kb):
                    trace = self.path(f"cut-{kb}.h5")
                    rc, out, err = ds(*RUN, "-c", cand, "-o", trace, limit=kb * 1024)
                    self.assertEqual(rc, 2, out + err)
                    self.assertIn(trace, err)
                    if not os.path.exists(trace):
                        continue  # cut before the file existed: nothing to read, nothing claimed
                    self.assertIn("keeps the stages written before the write failed", out)
                    kept = rows(trace)
                    self.assertLessEqual(len(kept), len(whole))
                    for (key, ref, cnd), (wkey, wref, wcnd) in zip(kept, whole):
                        self.assertEqual(key, wkey)
                        for got, want in ((ref, wref), (cnd, wcnd)):
                            if want is not None:
                                np.testing.assert_array_equal(got, want, err_msg=f"{key} at {kb} KB")
                    rc, out, err = ds("report", trace)
                    self.assertEqual(rc, 2, out + err)
                    self.assertIn("INCOMPLETE: the trace write failed", out)
                    self.assertIn(f"{len(kept)} stages judged", out)
                    self.assertNotIn("\nPASS", out)
                    os.remove(trace)

    def test_rows_past_written_are_never_read(self):
        trace = self.path("t.h5")
        rc, out, err = ds(*RUN, "-c", "mutant:chain-add-idx", "-o", trace)
        self.assertEqual(rc, 1, out + err)
        # What a failed flush may leave: rows counted as written up to the first failing stage's
        # layer, then the extent grown over zeros (an empty stage, status 0).
        with h5py.File(trace, "r+") as f:
            f["written"][0] = 20
            f["summary"].resize((f["summary"].shape[0] + 4,))
        rc, out, err = ds("report", trace)
        self.assertIn("20 stages judged", out)
        self.assertEqual(len(rows(trace)), 20)

    def test_merge_onto_a_full_disk_names_the_output_and_leaves_no_partial(self):
        a, b, merged = self.path("a.h5"), self.path("b.h5"), self.path("m.h5")
        for seed, t in ((0, a), (1, b)):
            rc, out, err = ds(*RUN, "-c", "cpu-f16", "--seed", str(seed), "-o", t)
            self.assertEqual(rc, 0, out + err)
        with open(merged, "wb") as f:
            f.write(b"last night's file")
        for kb in (4, 64, 300, 500):
            with self.subTest(limit_kb=kb):
                rc, out, err = ds("merge", "-o", merged, a, b, limit=kb * 1024)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(f"{merged}: cannot write the merged file", err)
                self.assertNotIn(a, err)
                self.assertNotIn(b, err)
                self.assertFalse(os.path.exists(merged + ".partial"))
                with open(merged, "rb") as f:
                    self.assertEqual(f.read(), b"last night's file")
        rc, out, err = ds("merge", "-o", merged, a, b)
        self.assertEqual(rc, 0, out + err)
        rc, out, err = ds("report", merged)
        self.assertEqual(rc, 0, out + err)

    def test_a_string_exit_code_is_a_corrupt_trace_naming_the_field(self):
        good, bad = self.path("good.h5"), self.path("bad.h5")
        rc, out, err = ds(*RUN, "-c", "cpu-f16", "-o", good)
        self.assertEqual(rc, 0, out + err)
        for name, value in (("string", "0"), ("float", 1.5), ("too large", 300), ("negative", -1)):
            with self.subTest(exit_code=name):
                shutil.copy(good, bad)
                with h5py.File(bad, "r+") as f:
                    import json
                    res = json.loads(bytes(f["result"][:]).decode())
                    res["exit_code"] = value
                    text = np.frombuffer(json.dumps(res).encode(), dtype=np.uint8)
                    f["result"].resize((len(text),))
                    f["result"][:] = text
                for cmd in (["report", bad], ["diff", good, bad]):
                    rc, out, err = ds(*cmd)
                    self.assertEqual(rc, 2, out + err)
                    self.assertIn(bad, err)
                    self.assertIn("exit_code", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
