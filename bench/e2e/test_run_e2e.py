#!/usr/bin/env python3
"""ctest smoke of run_e2e.py --quick: every run exits 0, the table carries the ratios to the
cpu-f16 baseline, and the JSON has a wall time, a non-zero peak tree RSS and a peak tree Pss for every run.
Without --logs, the temporary log directory is removed after runs that pass and kept, named, after
one that fails."""

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "e2e.json"
        p = subprocess.run([sys.executable, str(HERE / "run_e2e.py"), exe, "--quick", "--json", str(out),
                            "--logs", tmp], capture_output=True, text=True, timeout=120)
        print(p.stdout)
        print(p.stderr, file=sys.stderr)
        assert p.returncode == 0, f"run_e2e.py exited {p.returncode}"
        results = json.loads(out.read_text())["results"]
    labels = [r["label"] for r in results]
    assert labels == ["cpu-f16", "simt", "simt --simt-threads 1"], labels
    for r in results:
        assert r["exit_code"] == 0, r
        assert r["wall_s"] > 0 and r["peak_tree_rss_bytes"] > 0 and "peak_tree_pss_bytes" in r, r
    rows = [line for line in p.stdout.splitlines() if line.startswith("| qwen2-tiny")]
    assert len(rows) == 3, p.stdout
    assert re.search(r"\| cpu-f16 +\| 0 +\|.*\| - +\| - +\|$", rows[0]), rows[0]
    for row in rows[1:]:
        assert re.search(r"\| \d+\.\d\dx +\| \d+\.\d\dx +\|$", row), row
    for binary, exit_code, kept in [(exe, 0, False), ("/bin/false", 1, True)]:
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([sys.executable, str(HERE / "run_e2e.py"), binary, "--quick", "--defaults-only"],
                               capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=tmp))
            assert p.returncode == exit_code, (binary, p.returncode, p.stderr)
            left = list(Path(tmp).glob("ds-e2e-*"))
            assert bool(left) == kept, (binary, left)
            assert not kept or str(left[0]) in p.stderr, p.stderr
    print("ok")


if __name__ == "__main__":
    main()
