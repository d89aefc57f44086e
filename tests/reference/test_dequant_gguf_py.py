"""Driftscope's GGUF dequantisation against gguf-py's, bit for bit, on files a real llama.cpp wrote.

Usage: test_dequant_gguf_py.py DEQUANT_DUMP PEERS_DIR VENV_DIR

Every tensor of every quants/llama256.*.gguf and models/llama256.q*.gguf under PEERS_DIR (the
shared llama.cpp peer folder) is decoded by dequant_dump (our reader) and by
gguf.quants.dequantize (the PyPI package `gguf`, written apart from ggml's C), and the two f32
arrays must hold the same bit patterns. gguf-py is installed at test time into VENV_DIR (kept
between runs); no network or no peer folder is a skip (exit 77) that says why, never a pass.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP = 77
# The newest gguf-py checked to import with Debian 12's numpy 1.24; --no-deps keeps that numpy.
GGUF_PY = "gguf==0.19.0"
# Every block type the quants/ folder holds; a file set that lost one must fail, not shrink the test.
EXPECTED_TYPES = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                  "IQ4_NL", "IQ4_XS"}


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def venv_python(venv):
    """A python with numpy (Debian's) and gguf-py; created once per build directory."""
    py = venv / "bin" / "python"
    probe = [str(py), "-c", "import gguf.quants, numpy"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        skip(f"cannot create a venv at {venv}: {made.stderr.strip()}")
    pip = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-deps", GGUF_PY],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        tail = (pip.stderr.strip().splitlines() or ["no output"])[-1]
        skip(f"cannot install {GGUF_PY} into {venv} (no network?): {tail}")
    checked = subprocess.run(probe, capture_output=True, text=True)
    if checked.returncode != 0:
        sys.exit(f"{GGUF_PY} does not import with this numpy: {checked.stderr.strip()}")
    return py


def peer_files(peers):
    files = sorted((peers / "quants").glob("llama256.*.gguf"))
    files += sorted((peers / "models").glob("llama256.q*.gguf"))
    if not files:
        skip(f"no llama256 GGUFs under {peers}")
    return files


def compare(dump_tool, files):
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize

    seen_types, tensors, failures = set(), 0, []
    with tempfile.TemporaryDirectory(prefix="dequant-") as tmp:
        for path in files:
            out = Path(tmp) / path.name
            run = subprocess.run([dump_tool, str(path), str(out)], capture_output=True, text=True)
            if run.returncode != 0:
                failures.append(f"{path.name}: dequant_dump failed: {run.stderr.strip()}")
                continue
            ours_types = dict(line.split() for line in (out / "types.txt").read_text().splitlines())
            for t in GGUFReader(str(path)).tensors:
                kind = t.tensor_type.name
                seen_types.add(kind)
                if ours_types.get(t.name) != kind:
                    failures.append(f"{path.name}: {t.name}: type {ours_types.get(t.name)} here, "
                                    f"{kind} in gguf-py")
                    continue
                theirs = np.ascontiguousarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
                ours = np.fromfile(out / f"{t.name}.f32", dtype="<f4")
                if ours.shape != theirs.shape:
                    failures.append(f"{path.name}: {t.name} ({kind}): {ours.size} elements here, "
                                    f"{theirs.size} in gguf-py")
                    continue
                differ = np.flatnonzero(ours.view(np.uint32) != theirs.view(np.uint32))
                if differ.size:
                    i = differ[0]
                    failures.append(f"{path.name}: {t.name} ({kind}): {differ.size} of {ours.size} elements differ, "
                                    f"first at {i}: {ours[i]!r} here, {theirs[i]!r} in gguf-py")
                tensors += 1
    missing = EXPECTED_TYPES - seen_types
    if missing:
        failures.append(f"no tensor of type {', '.join(sorted(missing))} in the peer files")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{tensors} tensors of {len(files)} files compared; types {', '.join(sorted(seen_types))}; "
          f"{len(failures)} failures")
    return 1 if failures else 0


def main():
    if len(sys.argv) == 4 and sys.argv[3] == "--compare":
        sys.exit(compare(sys.argv[1], [Path(p) for p in sys.argv[2].split(os.pathsep)]))
    dump_tool, peers, venv = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if not peers.is_dir():
        skip(f"the llama.cpp peer folder {peers} is absent")
    files = peer_files(peers)
    py = venv_python(venv)
    # The comparison runs under the venv's python, which sees gguf-py and Debian's numpy.
    args = [str(py), __file__, dump_tool, os.pathsep.join(map(str, files)), "--compare"]
    sys.exit(subprocess.run(args).returncode)


if __name__ == "__main__":
    main()
