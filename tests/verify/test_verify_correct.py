"""Every correct candidate of the project passes driftscope verify on every tiny preset it can run
(a gate's refusal, exit 3, is a candidate that does not claim the model's ops, not a pass).

The whole of verify, the `check` battery included, runs for each candidate on every tiny preset:
the battery's own checks and verify's (poison, perturbed inputs, the cheat detectors) must find
nothing. It fits CI's time since the battery's hazard part runs the simt candidate on its checked
kernels (about 1 s a preset; the page-fault checker took about a minute), and since a preset
whose family's real-widths run an earlier preset made skips it (SAME_REAL_WIDTHS).
Usage: test_verify_correct.py DRIFTSCOPE"""
import json
import os
import subprocess
import sys
import tempfile

DRIFTSCOPE = sys.argv[1]
CANDIDATES = ["simt", "cpu-f16", "cpu-f16-v1"]


def tiny_presets():
    """The tiny presets but the -tails-tiny ones: each is its family's odd-widths part, which every
    verify of that family runs (and again here would only repeat the family's real-widths part,
    about 15 s of simt under memcheck and interleaving)."""
    out = subprocess.run([DRIFTSCOPE, "run", "--help"], capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if "Presets:" in l)
    names = [n.strip() for n in line.split("Presets:")[1].split(",")]
    return [n for n in names if n.endswith("-tiny") and not n.endswith("-tails-tiny")]


# Presets whose family's real-widths run (the family's -wide preset, the same command for every
# preset of the family) an earlier preset of the list already made: their verify skips that part
# (--skip-part), and the skipped part's command must be the one the earlier preset ran, so a
# preset that moves to a family of its own fails here rather than losing its run.
SAME_REAL_WIDTHS = {"llama-deep-tiny": "llama-tiny", "llama3-tiny": "llama-tiny",
                    "qwen2-bias-tiny": "qwen2-tiny", "qwen3moe-unnormed-tiny": "qwen3moe-tiny"}


def real_widths_command(verdict):
    return next(p["command"] for p in verdict["check_parts"] if p["name"] == "real widths")


def main():
    presets = tiny_presets()
    assert len(presets) >= 8, presets
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for candidate in CANDIDATES:
            wide_runs = {}  # preset -> its real-widths part's command, where it ran
            for preset in presets:
                out = os.path.join(tmp, f"{candidate}-{preset}.json")
                same = SAME_REAL_WIDTHS.get(preset)
                skip = ["--skip-part", "real widths"] if same in wide_runs else []
                p = subprocess.run([DRIFTSCOPE, "verify", "--model", f"synthetic:{preset}", "--candidate",
                                    candidate, "--json", out, *skip], capture_output=True, text=True, timeout=900)
                # A refusal is no pass: cpu-f16-v1 claims few ops; cpu-f16 and simt serve every
                # family (Qwen3-Next's shared expert included), so they are never refused.
                if p.returncode == 3 and candidate == "cpu-f16-v1":
                    print(f"--   {candidate} on {preset}: refused by the gate (ops it does not claim)")
                    continue
                with open(out) as f:
                    verdict = json.load(f)
                ok = p.returncode == 0 and verdict["verdict"] == "pass" and not verdict["findings"]
                if skip:
                    # Exactly the command the earlier preset's part ran (its --model the family's -wide preset).
                    wanted = wide_runs[same]
                    if real_widths_command(verdict) != wanted:
                        ok = False
                        print(f"FAIL {candidate} on {preset}: its real widths would run `{real_widths_command(verdict)}`, "
                              f"not {same}'s `{wanted}`: update SAME_REAL_WIDTHS")
                else:
                    wide_runs[preset] = real_widths_command(verdict)
                print(f"{'ok  ' if ok else 'FAIL'} {candidate} on {preset}: exit {p.returncode}, "
                      f"{[(x['kind'], x['stage']) for x in verdict['findings']]}"
                      f"{' (real widths as ' + same + ')' if skip else ''}")
                if not ok:
                    failures.append(f"{candidate} on {preset}")
                    print(p.stdout[-3000:], p.stderr[-2000:])
    if failures:
        print("FAILED:", *failures, sep="\n  ")
        sys.exit(1)


main()
