#!/usr/bin/env python3
"""Turns what scripts/gpu-check.sh left in OUT and RUNS into results.json and a gpu-results.md draft.

Standard library only: the GPU image has its own Python and nothing can be installed there.
Run after every step, so a check cut off anywhere still has a summary of what it reached.
"""
import csv
import json
import os
import sys


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def run_summary(runs, row):
    """One driftscope run: its exit code and, from its JSON report, the verdict and first failure."""
    report = read_json(os.path.join(runs, f"{row['step']}.{row['case']}.json")) or {}
    first = report.get("first_failure") or {}
    metrics = first.get("metrics") or {}
    where = ""
    if first:
        layer = first.get("layer")
        where = f"{first.get('stage')} (step {first.get('step')}, layer {'-' if layer is None else layer}, {first.get('mode')})"
    return {
        "step": row["step"],
        "case": row["case"],
        "exit": row["exit"],
        "seconds": row["seconds"],
        "verdict": (report.get("verdict") or "").splitlines()[0] if report.get("verdict") else "",
        "first_failure": where,
        "max_abs": metrics.get("max_abs"),
        "max_ulp": metrics.get("max_ulp"),
    }


def gtest_summary(path):
    doc = read_json(path)
    if not doc:
        return None
    cases = []
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            state = "skipped" if t.get("result") == "SKIPPED" else ("failed" if t.get("failures") else "passed")
            cases.append({"test": f"{suite['name']}.{t['name']}", "result": state,
                          "message": "; ".join(f.get("failure", "") for f in t.get("failures", []))[:400]})
    return cases


def bench_summary(path):
    doc = read_json(path)
    if not doc:
        return None
    ctx = doc.get("context", {})
    rows = []
    for b in doc.get("benchmarks", []):
        rows.append({"case": b.get("name"), "time": b.get("real_time"), "unit": b.get("time_unit"),
                     "GB/s": b.get("GB/s"), "peak_ratio": b.get("peak_ratio"),
                     "error": b.get("error_message") if b.get("error_occurred") else None})
    return {"context": {k: v for k, v in ctx.items() if k.startswith("cuda")}, "cases": rows}


def fmt_num(v, spec):
    return "" if v is None else format(v, spec)


def markdown(res):
    lines = ["# Results on a GPU", ""]
    facts = res["facts"]
    lines += [f"Measured by `scripts/gpu-check.sh` at commit {res.get('commit', '?')}.", ""]
    if facts:
        lines += ["## Device", "", "```", *facts, "```", ""]
    lines += ["## Steps", "", "| step | exit | seconds | limit |", "|---|---|---|---|"]
    lines += [f"| {s['step']} | {s['exit']} | {s['seconds']} | {s['limit']} |" for s in res["steps"]]
    lines += ["", "## driftscope runs", "",
              "Exit 0 is PASS, 1 a judged failure (first failing stage given), 3 a refusal, 4 a crash, 124 "
              "the step's time limit.", "",
              "| step | case | exit | s | verdict | first failure | max_abs | max_ulp |",
              "|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        verdict = r["verdict"].replace("|", "\\|")[:100]
        lines.append(f"| {r['step']} | {r['case']} | {r['exit']} | {r['seconds']} | {verdict} | {r['first_failure']} | "
                     f"{fmt_num(r['max_abs'], '.3g')} | {fmt_num(r['max_ulp'], '.3g')} |")
    for key, title in (("gdn_bitexact", "GDN bit-exactness on the device"), ("cupti", "CUPTI launch records")):
        lines += ["", f"## {title}", ""]
        tests = res.get(key)
        if tests is None:
            lines.append("not reached")
        for t in tests or []:
            lines.append(f"- `{t['test']}`: {t['result']}{(': ' + t['message']) if t['message'] else ''}")
    lines += ["", "## bench/kernels (cuda cases)", ""]
    bench = res.get("bench")
    if not bench:
        lines.append("not reached")
    else:
        lines += [f"- {k}: {v}" for k, v in bench["context"].items()]
        lines += ["", "| case | time | GB/s | peak_ratio |", "|---|---|---|---|"]
        for b in bench["cases"]:
            t = b["error"] or f"{fmt_num(b['time'], '.4g')} {b['unit']}"
            lines.append(f"| {b['case']} | {t} | {fmt_num(b['GB/s'], '.4g')} | {fmt_num(b['peak_ratio'], '.3f')} |")
    return "\n".join(lines) + "\n"


def main():
    out, runs = sys.argv[1], sys.argv[2]
    facts = []
    if os.path.exists(os.path.join(runs, "facts.csv")):
        with open(os.path.join(runs, "facts.csv")) as f:
            facts = [line.rstrip("\n") for line in f]
    commit = "?"
    log = os.path.join(out, "log.txt")
    if os.path.exists(log):
        with open(log, errors="replace") as f:
            head = f.readline()
        if " commit " in head:
            commit = head.rsplit(" commit ", 1)[1].strip()
    res = {
        "commit": commit,
        "facts": facts,
        "steps": read_tsv(os.path.join(out, "steps.tsv")),
        "runs": [run_summary(runs, r) for r in read_tsv(os.path.join(out, "runs.tsv"))],
        "gdn_bitexact": gtest_summary(os.path.join(runs, "gdn_bitexact.json")),
        "cupti": gtest_summary(os.path.join(runs, "cupti_test.json")),
        "bench": bench_summary(os.path.join(out, "bench_kernels.json")),
    }
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(out, "gpu-results.md"), "w") as f:
        f.write(markdown(res))


if __name__ == "__main__":
    main()
