#!/usr/bin/env python3
"""End-to-end benchmark of `driftscope run` on whole models (issue 17).

Each case runs the same model and flags under the `cpu-f16` candidate (the baseline, measured in
the same invocation) and under `simt` (its defaults: every core, then `--simt-threads 1`). For every run it
records the wall time, the peak resident memory of the whole process tree (the harness forks a
child process for the candidate, so the harness alone undercounts) and the exit code, then
prints a table with each run's ratio to the baseline.

Standard library only; Linux only (reads /proc).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# name -> (model, run flags). The flags are the case; the candidate varies within it.
CASES = {
    "qwen2.5-0.5b": ("synthetic:qwen2.5-0.5b",
                     ["--prompt-tokens", "16", "--decode-steps", "4", "--mode", "both"]),
    "llama3.2-1b": ("synthetic:llama3.2-1b",
                    ["--prompt-tokens", "16", "--decode-steps", "4", "--mode", "both"]),
    "qwen3-0.6b-long": ("synthetic:qwen3-0.6b", ["--prompt-tokens", "1024", "--layers", "2"]),
    # The preset written as a Q8_0 GGUF (by driftscope-mkfixture, before the case's runs): its
    # matrices stay quantized in memory, read a row at a time.
    "llama3.2-1b-q8_0": ("q8_0:llama3.2-1b",
                         ["--prompt-tokens", "16", "--decode-steps", "4", "--mode", "both"]),
    # The same as llama.cpp's Q4_K_M mix (Q4_K, Q6_K for the head and half the attn_v/ffn_down).
    "llama3.2-1b-q4_k_m": ("q4_k_m:llama3.2-1b",
                           ["--prompt-tokens", "16", "--decode-steps", "4", "--mode", "both"]),
    # Issue 54's 8B model at full depth, as llama.cpp's Q4_K_M mix (5 GB; writing it takes about
    # 3 minutes at an 18 GiB peak, each run about 4).
    "qwen3-8b-q4_k_m": ("q4_k_m:qwen3-8b",
                        ["--prompt-tokens", "16", "--decode-steps", "4", "--mode", "both"]),
}
QUICK = {"qwen2-tiny": ("synthetic:qwen2-tiny",
                        ["--prompt-tokens", "4", "--decode-steps", "2", "--mode", "both"])}
# The issue's letters for the cases (and (e), the Q4_K_M file beside its (d); (f), issue 54's 8B).
ALIASES = {"a": "qwen2.5-0.5b", "b": "llama3.2-1b", "c": "qwen3-0.6b-long", "d": "llama3.2-1b-q8_0",
           "e": "llama3.2-1b-q4_k_m", "f": "qwen3-8b-q4_k_m"}

BASELINE = ("cpu-f16", [])
CANDIDATES = [BASELINE, ("simt", []), ("simt", ["--simt-threads", "1"])]
SAMPLE_S = 0.05
RESCAN_S = 0.5


def find_driftscope():
    for build in sorted(REPO.glob("build*")):
        p = build / "harness" / "driftscope"
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def written_model(model, exe, into):
    """`TYPE:PRESET` written as a GGUF of that type into `into` by the build's driftscope-mkfixture
    (beside the binary's build tree); any other model spec as it is."""
    kind, _, preset = model.partition(":")
    if kind == "synthetic" or not preset:
        return model
    mkfixture = exe.resolve().parents[1] / "reference" / "tools" / "driftscope-mkfixture"
    if not mkfixture.is_file():
        sys.exit(f"run_e2e.py: the case's model is written by {mkfixture}, which is not built")
    print(f"writing {preset} as {kind} with {mkfixture.name}", file=sys.stderr, flush=True)
    subprocess.run([str(mkfixture), "--out", str(into), "--gguf-type", kind, "--gguf-only", preset],
                   check=True, stdout=subprocess.DEVNULL)
    return str(Path(into) / f"{preset}.gguf")


def children_map():
    """pid -> list of child pids, from every /proc/<pid>/stat (ppid is field 4)."""
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we looked
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def tree_pids(root):
    kids = children_map()
    pids, todo = [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(kids.get(p, []))
    return pids


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0  # exited, or a zombie (no VmRSS line)


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(cmd, log_path, timeout_s):
    """Runs cmd, sampling the summed VmRSS (and, less often, Pss) of its process tree; returns
    (rc, wall s, peak RSS bytes, peak Pss bytes)."""
    peak = peak_pss = 0
    with open(log_path, "wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        pids, scanned = [proc.pid], 0.0
        while proc.poll() is None:
            # Finding the tree reads every /proc/<pid>/stat (milliseconds); the candidate's child
            # lives for the rest of the run, so past the first seconds the tree is found again
            # twice a second, not every sample.
            now = time.monotonic()
            if now - scanned >= (SAMPLE_S if now - t0 < 2 else RESCAN_S):
                pids, scanned = tree_pids(proc.pid), time.monotonic()
                # Pss walks every mapping of the process (slow on gigabytes): only on a rescan.
                # Read twice, the smaller kept: Pss moving between processes while they are read
                # one after the other (one frees pages it shared with the other) never adds up
                # to more than the tree holds.
                first = [pss_kib(p) for p in pids]
                peak_pss = max(peak_pss, sum(min(a, pss_kib(p)) for a, p in zip(first, pids)))
            peak = max(peak, sum(rss_kib(p) for p in pids))
            if timeout_s and time.monotonic() - t0 > timeout_s:
                proc.kill()
                proc.wait()
                break
            time.sleep(SAMPLE_S)
        wall = time.monotonic() - t0
    return proc.returncode, wall, peak * 1024, peak_pss * 1024


def fmt_wall(s):
    return f"{int(s // 60)} min {s % 60:04.1f} s" if s >= 60 else f"{s:.1f} s"


def fmt_bytes(b):
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"


def table(results):
    head = ["case", "candidate", "exit", "wall", "peak tree RSS", "peak tree Pss", "wall / cpu-f16",
            "RSS / cpu-f16"]
    rows = []
    for r in results:
        ratio_w = f"{r['wall_ratio']:.2f}x" if r.get("wall_ratio") is not None else "-"
        ratio_m = f"{r['rss_ratio']:.2f}x" if r.get("rss_ratio") is not None else "-"
        rows.append([r["case"], r["label"], str(r["exit_code"]), fmt_wall(r["wall_s"]),
                     fmt_bytes(r["peak_tree_rss_bytes"]), fmt_bytes(r["peak_tree_pss_bytes"]), ratio_w,
                     ratio_m])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    return "\n".join(out + [line(r) for r in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("driftscope", nargs="?", help="the driftscope binary (default: build*/harness/driftscope)")
    ap.add_argument("--cases", default="qwen2.5-0.5b,llama3.2-1b,qwen3-0.6b-long",
                    help="comma-separated: " + ", ".join(CASES) + " (or a, b, c, d)")
    ap.add_argument("--quick", action="store_true", help="a tiny smoke case instead (seconds)")
    ap.add_argument("--json", metavar="OUT", help="write every run's figures to OUT")
    ap.add_argument("--logs", metavar="DIR", help="keep each run's output in DIR (default: a temp dir)")
    ap.add_argument("--defaults-only", action="store_true",
                    help="skip the `simt --simt-threads 1` run: two runs of a case instead of three")
    ap.add_argument("--timeout", type=float, default=0, help="kill a run after this many seconds")
    args = ap.parse_args()

    exe = Path(args.driftscope) if args.driftscope else find_driftscope()
    if exe is None or not exe.is_file():
        sys.exit("run_e2e.py: no driftscope binary (build it, or pass its path)")
    if args.quick:
        cases = QUICK
    else:
        names = [ALIASES.get(n.strip(), n.strip()) for n in args.cases.split(",") if n.strip()]
        unknown = [n for n in names if n not in CASES]
        if unknown:
            sys.exit(f"run_e2e.py: unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
        cases = {n: CASES[n] for n in names}
    logs = Path(args.logs) if args.logs else Path(tempfile.mkdtemp(prefix="ds-e2e-"))
    logs.mkdir(parents=True, exist_ok=True)

    results = []
    models = Path(tempfile.mkdtemp(prefix="ds-e2e-models-"))
    try:
        for name, (spec, flags) in cases.items():
            model = written_model(spec, exe, models)
            base = None
            for cand, extra in CANDIDATES:
                if args.defaults_only and extra:
                    continue
                label = " ".join([cand] + extra)
                cmd = [str(exe), "run", "--model", model, "--candidate", cand] + flags + extra
                log = logs / f"{name}.{label.replace(' ', '_').replace('-', '')}.log"
                print(f"running {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
                rc, wall, peak, peak_pss = measure(cmd, log, args.timeout)
                r = {"case": name, "model": model, "candidate": cand, "label": label,
                     "command": cmd, "exit_code": rc, "wall_s": round(wall, 3),
                     "peak_tree_rss_bytes": peak, "peak_tree_pss_bytes": peak_pss, "log": str(log)}
                if (cand, extra) == BASELINE:
                    base = r
                elif base and base["wall_s"] > 0 and base["peak_tree_rss_bytes"] > 0:
                    r["wall_ratio"] = round(wall / base["wall_s"], 3)
                    r["rss_ratio"] = round(peak / base["peak_tree_rss_bytes"], 3)
                results.append(r)
                print(f"  exit {rc}, {fmt_wall(wall)}, peak tree RSS {fmt_bytes(peak)}, Pss {fmt_bytes(peak_pss)}",
                      file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(models, ignore_errors=True)  # a written model is gigabytes: never left behind
    print(table(results))
    failed = [r for r in results if r["exit_code"] != 0]
    if not args.logs and not failed:
        # The temporary log directory is kept only to show a failure's output.
        shutil.rmtree(logs, ignore_errors=True)
        for r in results:
            r["log"] = None
    if args.json:
        Path(args.json).write_text(json.dumps({"driftscope": str(exe), "results": results}, indent=2))
    for r in failed:
        print(f"{r['case']} {r['label']}: exit {r['exit_code']} (output: {r['log']})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
