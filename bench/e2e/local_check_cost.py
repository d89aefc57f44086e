#!/usr/bin/env python3
"""What the local check costs (docs/policies.md, "The local check"): each case runs twice in the
same invocation, with `--local-check off` (the baseline) and with the check on, and the table gives
the second run's wall time and peak process-tree memory as ratios to the first.

The check recomputes every chained block twice more (two honest engines, f32 and exact sums), so
its cost is about two reference layers per layer, on top of whatever the candidate costs.

Cases:
  dumps   the llama.cpp peer folder's dumps (llama256 in F32, Q8_0 and Q4_K_M, the Qwen3.5 hybrid):
          the check runs by default for these (`auto`); seconds each
  real    `synthetic:qwen2.5-0.5b --layers 4 --prompt-tokens 16 --decode-steps 4 --mode chained`
          with the `cpu-f16` candidate, `--local-check on`: real widths (about a minute each run)

Usage: local_check_cost.py [DRIFTSCOPE] [--cases dumps,real] [--peers DIR] [--json OUT]
Exit: 1 if a run exited non-zero, 77 if there was no case to run (no peer folder, `--cases dumps`).
Standard library only; Linux only (reads /proc, through run_e2e.measure).
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_e2e  # noqa: E402  (measure, find_driftscope, fmt_wall, fmt_bytes)

# The peer folder's dumps with the model each was written from.
PEER_DUMPS = [("llama256", "llama256.gguf"), ("llama256.q8_0", "llama256.q8_0.gguf"),
              ("llama256.q4_k_m", "llama256.q4_k_m.gguf"), ("qwen35-all", "qwen35-tiny.gguf")]


def cases(names, peers):
    """(case name, base command without the --local-check flag, the flag value that turns it on)."""
    out = []
    if "dumps" in names:
        root = Path(peers)
        if not (root / "dumps").is_dir():
            print(f"dumps: skipped, the peer folder {root} has no dumps/")
        for dump, model in PEER_DUMPS:
            d, m = root / "dumps" / dump, root / "models" / model
            if d.is_dir() and m.is_file():
                out.append((f"dump:{dump}", ["run", "--model", str(m), "--candidate", f"dump:{d}",
                                             "--decode-steps", "3"], "auto"))
    if "real" in names:
        out.append(("qwen2.5-0.5b x4 chained", ["run", "--model", "synthetic:qwen2.5-0.5b", "--layers", "4",
                                                 "--prompt-tokens", "16", "--decode-steps", "4", "--mode",
                                                 "chained", "--candidate", "cpu-f16"], "on"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("driftscope", nargs="?", help="the driftscope binary (default: build*/harness/driftscope)")
    ap.add_argument("--cases", default="dumps,real", help="comma-separated: dumps, real")
    ap.add_argument("--peers", default=str(run_e2e.REPO.parent / "shared" / "peers" / "llama.cpp"),
                    help="the llama.cpp peer folder (default: ../shared/peers/llama.cpp)")
    ap.add_argument("--json", metavar="OUT", help="write every run's figures to OUT")
    ap.add_argument("--timeout", type=float, default=0, help="kill a run after this many seconds")
    args = ap.parse_args()
    ds = args.driftscope or run_e2e.find_driftscope()
    results, failed = [], False
    todo = cases(set(args.cases.split(",")), args.peers)
    if not todo:
        print("SKIP: no case to run")
        return 77
    with tempfile.TemporaryDirectory() as logs:
        for i, (name, cmd, on) in enumerate(todo):
            runs = {}
            for label, flag in (("off", "off"), ("on", on)):
                log = os.path.join(logs, f"{i}-{label}.log")
                rc, wall, rss, pss = run_e2e.measure([ds, *cmd, "--local-check", flag], log, args.timeout)
                if rc != 0:
                    failed = True
                    print(f"{name} --local-check {flag}: exit {rc}\n" + Path(log).read_text()[-2000:])
                runs[label] = {"exit_code": rc, "wall_s": wall, "peak_tree_pss_bytes": pss,
                               "peak_tree_rss_bytes": rss}
            results.append({"case": name, "command": cmd, **runs,
                            "wall_ratio": runs["on"]["wall_s"] / max(runs["off"]["wall_s"], 1e-9),
                            "pss_ratio": runs["on"]["peak_tree_pss_bytes"] /
                            max(runs["off"]["peak_tree_pss_bytes"], 1)})
    print("| case | wall, check off | wall, check on | wall on / off | peak Pss off | peak Pss on | Pss on / off |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['case']} | {run_e2e.fmt_wall(r['off']['wall_s'])} | {run_e2e.fmt_wall(r['on']['wall_s'])} | "
              f"{r['wall_ratio']:.2f}x | {run_e2e.fmt_bytes(r['off']['peak_tree_pss_bytes'])} | "
              f"{run_e2e.fmt_bytes(r['on']['peak_tree_pss_bytes'])} | {r['pss_ratio']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
