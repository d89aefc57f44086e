"""driftscope verify's planted table: one plugin (planted_candidate.cpp) of RMSNorm candidates on a
decoder, the other stages filled by the reference. The correct one passes; each planted bug or
cheat is named with its kind at the stage it sits in; a candidate that crashes is exit 4.
With the plugin built from the kernels' CHECKED flavour (FLAVOUR "checked"), the hazard checker sees
every access: the races are named with the file:line of both accesses, the static-shared race by the
checker too (kind `hazard` beside the schedule's `race`), and the uninit findings name the line of
the read (of shared memory, and of the stale global buffer).
Usage: test_verify_planted.py DRIFTSCOPE PLUGIN.so SEGV_PLUGIN.so FLAVOUR
(SEGV_PLUGIN: tests/plugin, segfaults at layer 1; FLAVOUR: "checked" or "plain")"""
import json
import os
import subprocess
import sys
import tempfile

DRIFTSCOPE, PLUGIN, SEGV_PLUGIN, FLAVOUR = sys.argv[1:5]
CHECKED = FLAVOUR == "checked"
MODEL = "synthetic:llama-tiny"
SOURCE = "planted.cu:"


def marked_line(marker):
    """'planted.cu:N' of the line of planted.cu holding `marker`."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "planted.cu")) as f:
        for n, text in enumerate(f, 1):
            if marker in text:
                return f"{SOURCE}{n}"
    raise SystemExit(f"planted.cu has no line marked {marker}")


STALE_READ = marked_line("@stale-read")
UNINIT_LOCAL = marked_line("@uninit-local")

# (case, candidate in the plugin, the finding it must draw: (kind, stage), or None for a pass, and
# the other kinds it may also draw). Any candidate whose output is wrong also fails plain parity
# (`parity`, and the `probe`/`tail`/`batch` parts where they fail first); no other kind may appear.
WRONG = {"parity", "probe", "tail", "size", "batch"}
CASES = [
    ("correct kernel passes", "planted-correct", None, set()),
    ("reads dynamic shared memory nobody wrote", "planted-uninit-shared", ("uninit", "attn_norm"), WRONG),
    ("reads static shared memory nobody wrote", "planted-uninit-static-shared", ("uninit", "attn_norm"), WRONG),
    ("reads a global buffer an earlier call left", "planted-stale-global", ("uninit", "attn_norm"), WRONG),
    # What an uninitialised register holds depends on what ran before on the host thread: the
    # schedules differ too.
    ("a local partial sum nobody wrote", "planted-uninit-local", ("uninit", "attn_norm"), WRONG | {"race"}),
    # The checked flavour's schedule rerun interleaves the blocks and may see the lost update as a value.
    ("global += between blocks without atomicAdd", "planted-lost-update", ("hazard", "attn_norm"), WRONG | {"race"}),
    # Split only past 2048 columns: every tiny part passes, the real-widths part (hidden 2304) fails;
    # its first schedule rerun interleaves the blocks at each access of checked kernels. Without the
    # checked flavour the blocks run one after the other and the update is never lost: a pass.
    ("split-K past 2048 columns, += between blocks", "planted-split-past-2048",
     ("race", "attn_norm") if CHECKED else None, WRONG),
    ("static __shared__ tree without barriers", "planted-static-shared-race", ("race", "attn_norm"),
     WRONG | {"hazard"}),
    ("computes in f16 while declaring f32", "planted-half-compute", ("low_precision", "attn_norm"), WRONG),
    ("keeps its output across calls", "planted-cached-output", ("cached_output", "attn_norm"), WRONG),
    ("returns its input", "planted-returns-input", ("returns_input", "attn_norm"), WRONG),
    # A constant is also the same output at every call.
    ("never reads its input", "planted-constant-output", ("input_insensitive", "attn_norm"),
     WRONG | {"cached_output"}),
]


def verify(candidate, out_json, *extra):
    cmd = [DRIFTSCOPE, "verify", "--model", MODEL, "--candidate", f"{PLUGIN}:{candidate}", "--fill",
           "reference", "--seed", "3", "--json", out_json, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    with open(out_json) as f:
        return p, json.load(f)


def checked_evidence(candidate, findings):
    """What the hazard checker of the checked flavour adds: file:line of the races' two accesses and
    of the uninit reads. Returns what is missing."""
    if not CHECKED:
        return []
    by_kind = {f["kind"]: f["evidence"] for f in findings if f["stage"] == "attn_norm"}
    wrong = []
    if candidate in ("planted-lost-update", "planted-static-shared-race"):
        ev = by_kind.get("hazard", {})
        memory = "between blocks on global memory" if candidate == "planted-lost-update" else "static shared memory"
        verdict = ev.get("verdict", "")
        if memory not in verdict or verdict.count(SOURCE) < 2:
            wrong.append(f"the hazard finding names no '{memory}' race with two lines of {SOURCE}: {ev}")
        else:
            print(f"       hazard: {verdict[verdict.find(memory) - 12:][:160]}...")
    if candidate in ("planted-uninit-shared", "planted-uninit-static-shared"):
        ev = by_kind.get("uninit", {})
        lines = ev.get("read_lines", [])
        if not lines or not all(SOURCE in l for l in lines):
            wrong.append(f"the uninit finding names no read line in {SOURCE}: {ev}")
        else:
            print(f"       uninit read at {', '.join(lines)}")
    if candidate == "planted-stale-global":
        # The read of the sum nothing wrote, in the global buffer kept across calls.
        ev = by_kind.get("uninit", {})
        lines, reads = ev.get("read_lines", []), ev.get("reads", [])
        if not any(l.endswith(STALE_READ) for l in lines) or not all(SOURCE in l for l in lines) \
                or not any("scale_kernel" in r and "global memory" in r for r in reads):
            wrong.append(f"the stale-global uninit finding names no global read at {STALE_READ}: {ev}")
        else:
            print(f"       uninit read at {', '.join(lines)}")
        # The memory part's memcheck finds the same read with no poison: one finding holds both.
        memcheck = ev.get("memcheck", {}).get("verdict", "")
        if "uninitialized read" not in memcheck or not memcheck.split(", thread")[0].endswith(STALE_READ):
            wrong.append(f"the stale-global uninit finding has no memcheck read at {STALE_READ}: {ev}")
        else:
            print(f"       and memcheck's: {memcheck[:160]}...")
    return wrong


def local_evidence(candidate, findings):
    """A local read before it is written lives in a register, which no checker sees: verify singles
    out each declaration site the stage reached, in plain and checked builds alike. Returns what is
    missing."""
    uninit = [f["evidence"] for f in findings if f["kind"] == "uninit" and f["stage"] == "attn_norm"]
    lines = uninit[0].get("local_lines", []) if uninit else []
    if candidate == "planted-uninit-local":
        if len(lines) != 1 or not lines[0].endswith("/" + UNINIT_LOCAL):
            return [f"the uninit finding names not the local `part` at {UNINIT_LOCAL}: {uninit}"]
        print(f"       local read before written: {uninit[0]['local_reads'][0]}")
    elif lines:
        return [f"an uninit finding names a local where none is read unwritten: {lines}"]
    return []


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, candidate, expected, also in CASES:
            p, verdict = verify(candidate, os.path.join(tmp, f"{candidate}.json"))
            kinds = sorted({(f["kind"], f["stage"]) for f in verdict["findings"]})
            stray = {k for k, _ in kinds} - also - ({expected[0]} if expected else set())
            if expected is None:
                ok = p.returncode == 0 and verdict["verdict"] == "pass" and not verdict["findings"]
            else:
                ok = p.returncode == 1 and verdict["verdict"] == "fail" and expected in kinds and not stray
            print(f"{'ok  ' if ok else 'FAIL'} {case}: exit {p.returncode}, findings {kinds}"
                  + (f", unexpected kinds {sorted(stray)}" if stray else ""))
            if not ok:
                failures.append(case)
                print(p.stdout[-3000:], p.stderr[-2000:])
            for f in verdict["findings"]:
                if not f["kind"] or not isinstance(f["evidence"], dict) or not f["evidence"]:
                    failures.append(f"{case}: finding without kind or evidence: {f}")
            if candidate == "planted-uninit-shared":
                uninit = [f for f in verdict["findings"] if f["kind"] == "uninit"][0]
                ev = uninit["evidence"]
                if not any("rmsnorm_kernel" in k for k in ev["kernels"]) or ev["element"] < 0:
                    failures.append(f"{case}: the uninit finding names no kernel or element: {ev}")
            # The finding that says why takes the place of the battery's at its stage (fold_explained):
            # the stage is one finding of the expected kind, and the parts it failed are in its evidence.
            if expected and expected[0] not in WRONG:
                at_stage = [f for f in verdict["findings"] if f["stage"] == expected[1]]
                folded = [f["kind"] for f in at_stage if f["kind"] in WRONG]
                if folded:
                    failures.append(f"{case}: {folded} beside {expected[0]} at {expected[1]}, not folded into it")
                first = [f for f in at_stage if f["kind"] == expected[0]]
                if first and verdict["findings"][0]["stage"] == expected[1] and \
                        verdict["findings"][0]["kind"] not in (expected[0], *also):
                    failures.append(f"{case}: the first finding is {verdict['findings'][0]['kind']}")
            failures += [f"{case}: {w}" for w in checked_evidence(candidate, verdict["findings"])]
            failures += [f"{case}: {w}" for w in local_evidence(candidate, verdict["findings"])]
        # Deterministic for a seed: the same verdict, byte for byte, on a second run.
        a = verify("planted-stale-global", os.path.join(tmp, "a.json"), "--checks", "poison,cached")[1]
        b = verify("planted-stale-global", os.path.join(tmp, "b.json"), "--checks", "poison,cached")[1]
        if a != b:
            failures.append("two runs of the same seed gave different verdicts")
        else:
            print("ok   the verdict is the same on a second run of the seed")
        # A crash: exit 4, the crash a finding at its stage, and nothing run again after it.
        out = os.path.join(tmp, "segv.json")
        p = subprocess.run([DRIFTSCOPE, "verify", "--model", MODEL, "--candidate", SEGV_PLUGIN, "--fill", "reference",
                            "--json", out], capture_output=True, text=True, timeout=600)
        with open(out) as f:
            verdict = json.load(f)
        crashes = [f for f in verdict["findings"] if f["kind"] == "crash"]
        skipped = [c for c in verdict["checks"] if not c["ran"]]
        if p.returncode != 4 or verdict["exit_code"] != 4 or len(crashes) != 1 or crashes[0]["stage"] != "attn_norm" \
                or len(skipped) != 5:
            failures.append(f"a crashing candidate: exit {p.returncode}, {verdict['findings']}, {verdict['checks']}")
        else:
            print("ok   a crashing candidate is exit 4 with one crash finding at attn_norm")
        # Bad input: exit 2, naming what is wrong.
        p = subprocess.run([DRIFTSCOPE, "verify", "--model", "synthetic:no-such", "--candidate", "simt"],
                           capture_output=True, text=True)
        if p.returncode != 2 or "no-such" not in p.stderr:
            failures.append(f"an unknown model: exit {p.returncode}, {p.stderr!r}")
        else:
            print("ok   an unknown model is exit 2")
        # A plugin path with no file: every part's run is bad input, so verify is exit 2, not a refusal.
        missing = os.path.join(tmp, "no-such-plugin.so")
        p = subprocess.run([DRIFTSCOPE, "verify", "--model", MODEL, "--candidate", missing, "--checks", "check"],
                           capture_output=True, text=True, timeout=600)
        if p.returncode != 2 or f"{missing}: no such file" not in p.stdout or "VERIFY BAD-INPUT" not in p.stdout:
            failures.append(f"a missing plugin: exit {p.returncode}, {p.stdout[-1500:]!r}")
        else:
            print("ok   a missing plugin file is exit 2, naming it")
    if failures:
        print("FAILED:", *failures, sep="\n  ")
        sys.exit(1)


main()
