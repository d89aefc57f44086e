"""The compare engine's metrics in numpy, for a throughput comparison on the same data.

Usage: numpy_metrics.py RAW N  (RAW holds N float32 reference values then N candidate values).
Prints `numpy_seconds S` (best of 3) and a few metrics for a sanity check."""
import sys
import time

import numpy as np


def metrics(r, c, atol, rtol):
    r64, c64 = r.astype(np.float64), c.astype(np.float64)
    d = np.abs(c64 - r64)
    i = int(np.argmax(d))
    ar = np.abs(r64)
    bad = ~(d <= atol + rtol * ar)
    ri, ci = r.view(np.int32).astype(np.int64), c.view(np.int32).astype(np.int64)
    ri = np.where(ri < 0, -(ri & 0x7FFFFFFF), ri)
    ci = np.where(ci < 0, -(ci & 0x7FFFFFFF), ci)
    ulp = np.abs(ri - ci)
    s_r2, s_c2, s_d2 = np.dot(r64, r64), np.dot(c64, c64), np.dot(d, d)
    return {
        "max_abs": d[i], "max_abs_index": i, "mean_abs": d.mean(), "rms": np.sqrt(s_d2 / d.size),
        "max_rel": (d / np.maximum(ar, np.finfo(np.float64).tiny)).max(), "max_ulp": ulp.max(),
        "mean_ulp": ulp.mean(), "ulp_hist": np.histogram(ulp, [0, 1, 2, 4, 16, 256, 65536, 2**62])[0],
        "cosine": np.dot(r64, c64) / np.sqrt(s_r2 * s_c2), "nmse": s_d2 / s_r2,
        "mismatches": int(bad.sum()), "first_mismatch": int(np.argmax(bad)) if bad.any() else -1,
        "nan": int(np.isnan(c).sum()), "inf": int(np.isinf(c).sum()),
        "min_atol": (d - rtol * ar).max(),
    }


def main():
    n = int(sys.argv[2])
    data = np.fromfile(sys.argv[1], dtype=np.float32)
    r, c = data[:n], data[n:2 * n]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        m = metrics(r, c, 1e-5, 1.3e-6)
        best = min(best, time.perf_counter() - t0)
    print(f"numpy_seconds {best:.6f}")
    print(f"numpy max_abs {m['max_abs']:.9g} mismatches {m['mismatches']} max_ulp {m['max_ulp']}")


if __name__ == "__main__":
    main()
