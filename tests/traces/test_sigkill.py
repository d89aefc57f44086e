"""A `driftscope run` killed by SIGKILL leaves a trace that `driftscope report` and h5py
(swmr=True) both open, holding every layer flushed before the kill.

The kill is deterministic: DRIFTSCOPE_TEST_KILL_AFTER_LAYERS=N makes the runner raise(SIGKILL)
right after its N-th per-layer flush."""
import collections
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

DS = sys.argv[1]
LAYERS = 2  # synthetic:qwen2-tiny


def main():
    tmp = tempfile.mkdtemp(prefix="ds_sigkill_")
    for n in (1, 2, 3, 7, 17):
        path = os.path.join(tmp, f"killed_{n}.h5")
        env = dict(os.environ, DRIFTSCOPE_TEST_KILL_AFTER_LAYERS=str(n))
        p = subprocess.run([DS, "run", "-m", "synthetic:qwen2-tiny", "-c", "cpu-f16", "--mode", "both",
                            "--decode-steps", "8", "-o", path], env=env, capture_output=True)
        assert p.returncode == -9, f"n={n}: expected SIGKILL, got {p.returncode}: {p.stderr!r}"

        with h5py.File(path, "r", swmr=True) as f:
            assert f.attrs["schema"] == "driftscope-trace"
            s = f["summary"][:]
            assert f["result"].shape[0] == 0, "a killed run has no result"
            per_layer = collections.Counter((int(r["step"]), int(r["layer"])) for r in s if r["layer"] >= 0)
            # Exactly the N flushed layers are there, each complete (same number of stages).
            assert len(per_layer) == n, (n, sorted(per_layer))
            assert len(set(per_layer.values())) == 1, per_layer
            expected = [(i // LAYERS, i % LAYERS) for i in range(n)]
            assert sorted(per_layer) == expected, (sorted(per_layer), expected)
            # The stored tensors of the last flushed row read back whole.
            last = s[-1]
            k = int(np.prod(last["shape"][: last["rank"]]))
            ref = f["tensors/ref"][last["ref_offset"]: last["ref_offset"] + k]
            assert ref.shape == (k,) and np.all(np.isfinite(ref))

        r = subprocess.run([DS, "report", path], capture_output=True, text=True)
        assert r.returncode == 1, (n, r.returncode, r.stderr)  # never a pass: INCOMPLETE
        assert "INCOMPLETE: the run did not finish" in r.stdout, r.stdout
        assert f"{len(s)} stage row(s) were flushed" in r.stdout
        print(f"killed after {n} layers: {len(s)} rows, report exit {r.returncode}")


if __name__ == "__main__":
    main()
