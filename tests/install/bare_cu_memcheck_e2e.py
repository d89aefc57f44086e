"""Issue 51's planted table as a kernel author meets it: one small .cu per fault
(tests/install/bare_cu/memcheck/: RMSNorm written for nvcc, each file including the author's own
helper header, planted_rmsnorm.cuh), handed to an installed driftscope as
`check --candidate FILE.cu --stage-map MAP` and to `verify` the same way. Each fault is named by the
first part of the battery that fails, at its stage, layer and step, with the file:line of the
file's `@planted` line and what went wrong, and nothing crashes the harness: out-of-bounds stores, a
wild store gigabytes away and a null store are findings. verify's first finding is of the fault's
kind at the same stage and step. A kernel with a same-value write-write (benign) and a missing
barrier: the hazard part names the real read-after-write first, the benign pair as a note. No .cu is
changed (their SHA-256 before and after)."""
import json
import os
import shutil
import sys
import tempfile

from install_common import install, sh, sha256

BUILD_DIR, KERNELS = map(os.path.abspath, sys.argv[1:3])
MODEL = "synthetic:llama-tiny"

# (file, check's exit code, the first failing part, (stage, layer, step), verify's first finding kind,
# texts the part's verdict must hold). Memcheck's findings are exit 1 and kind `memory` (a read of
# memory nothing wrote `uninit`); a barrier or mask the block cannot honour stops the launch, a crash
# (exit 4).
CASES = [
    ("grid_guard", 1, "memory errors", ("attn_norm", 0, 1), "memory",
     ["scale_flat: out-of-bounds", "thread (64,0,0) of block (0,0,0)",
      "0 bytes past the end of a 256-byte block allocated at ", "planted_rmsnorm.cuh:"]),
    ("weight_before_start", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["out-of-bounds read of 4 bytes", "4 bytes before the start of a 256-byte block"]),
    ("static_shared", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["out-of-bounds write of 4 bytes", "thread (32,0,0)", "0 bytes past the end of a 128-byte static __shared__ array"]),
    ("dynamic_shared", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["out-of-bounds write of 4 bytes", "past the end of the block's dynamic shared memory (128 bytes, as launched)"]),
    ("misaligned_float4", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["misaligned access of 16 bytes", "needs an address that is a multiple of 16"]),
    ("use_after_free", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["use-after-free read of 4 bytes", "already freed"]),
    # The second cudaFree runs after the step's last launch: the step's finding all the same.
    ("double_free", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["double free of a 1024-byte block allocated at ", "planted_rmsnorm.cuh:"]),
    # verify classes a read of memory nothing wrote as `uninit`, memcheck's finding its evidence.
    ("unwritten_bias", 1, "memory errors", ("attn_norm", 0, 0), "uninit",
     ["uninitialized read of 4 bytes", "nothing wrote it"]),
    ("null_store", 1, "memory errors", ("attn_norm", 0, 1), "memory", ["null pointer write", "address 0x0"]),
    ("wild_store", 1, "memory errors", ("attn_norm", 0, 0), "memory",
     ["wild pointer write", "thread (0,0,0) of block (1,0,0)", "1073740800 bytes past the end of a 1024-byte block"]),
    ("divergent_barrier", 4, "memory errors", ("attn_norm", 0, 0), "crash",
     ["divergent __syncthreads: thread (0,0,0) waits at"]),
    ("shuffle_mask", 4, "memory errors", ("attn_norm", 0, 0), "crash",
     ["names lane 16 which does not exist (block has 48 threads)"]),
]


def planted_line(path, marker="@planted"):
    with open(path) as f:
        return next(n for n, line in enumerate(f, 1) if marker in line)


def first_failing(report):
    return next(p for p in json.load(open(report))["parts"] if p["exit_code"] != 0)


def main():
    work = tempfile.mkdtemp(prefix="ds-memcheck-")
    try:
        ds, _ = install(BUILD_DIR, work)
        user = os.path.join(work, "user")  # the author's folder: the .cu files and their header
        shutil.copytree(os.path.join(KERNELS, "memcheck"), user)
        hashes = {f: sha256(os.path.join(user, f)) for f in os.listdir(user)}
        failures = []
        for name, exit_code, part, (stage, layer, step), kind, texts in CASES:
            cu, stage_map = os.path.join(user, f"{name}.cu"), os.path.join(work, f"{name}.yaml")
            open(stage_map, "w").write(f"kind: rmsnorm\nentry: {name}_forward\n")
            wd, report = os.path.join(work, f"wd-{name}"), os.path.join(work, f"check-{name}.json")
            p = sh(ds, "check", "--model", MODEL, "--candidate", cu, "--stage-map", stage_map, "--seed", "3",
                   "--decode-steps", "1", "--fail-fast", "--trace-dir", wd, "--json", report, cwd=work,
                   ok=(exit_code,))
            failed = first_failing(report)
            verdict = failed["verdict"]
            line = f"{name}.cu:{planted_line(cu)}"
            want = [f"{stage} of layer {layer}, step {step} ", line, *texts]
            missing = [t for t in want if t not in verdict]
            if failed["name"] != part or missing:
                failures.append(f"{name}: check's first failing part {failed['name']!r} (wanted {part!r}), "
                                f"missing {missing} in:\n  {verdict}")
            # verify, from the build check kept.
            v_json = os.path.join(work, f"verify-{name}.json")
            sh(ds, "verify", "--model", MODEL, "--candidate", cu, "--stage-map", stage_map, "--seed", "3",
               "--work-dir", wd, "--json", v_json, cwd=work, ok=(1, 4))
            findings = json.load(open(v_json))["findings"]
            got = (findings[0]["kind"], findings[0]["stage"], findings[0]["layer"], findings[0]["step"]) \
                if findings else None
            evidence = json.dumps(findings[0]) if findings else ""
            if got != (kind, stage, layer, step) or line not in evidence:
                failures.append(f"{name}: verify's first finding {got} (wanted {(kind, stage, layer, step)} naming "
                                f"{line}):\n  {evidence[:1500]}")
            print(f"{name}.cu: check exit {exit_code} at {failed['name']}, verify {got}: {verdict[:160]}")

        # The benign write-write beside the missing barrier: the whole battery (the missing barrier
        # also makes the numbers wrong, so `both modes` fails before the hazard part).
        name = "benign_and_missing_barrier"
        cu, stage_map = os.path.join(user, f"{name}.cu"), os.path.join(work, f"{name}.yaml")
        open(stage_map, "w").write(f"kind: rmsnorm\nentry: {name}_forward\n")
        report = os.path.join(work, f"check-{name}.json")
        sh(ds, "check", "--model", MODEL, "--candidate", cu, "--stage-map", stage_map, "--seed", "3",
           "--decode-steps", "1", "--trace-dir", os.path.join(work, f"wd-{name}"), "--json", report, cwd=work,
           ok=(1,))
        hazards = next(p for p in json.load(open(report))["parts"] if p["name"] == "shared-memory hazards")
        real, benign = f"{name}.cu:{planted_line(cu)}", f"{name}.cu:{planted_line(cu, '@benign')}"
        print(f"{name}.cu: shared-memory hazards: {hazards['verdict'][:300]}")
        if hazards["exit_code"] != 1 or real not in hazards["verdict"] or \
                hazards["verdict"].find(real) > hazards["verdict"].find(benign) >= 0:
            failures.append(f"{name}: the hazard part does not name the missing barrier ({real}) first:\n"
                            f"  {hazards['verdict']}")

        changed = [f for f, h in hashes.items() if sha256(os.path.join(user, f)) != h]
        if changed:
            failures.append(f"driftscope changed {changed}")
        if failures:
            sys.exit("FAILED:\n" + "\n".join(failures))
        print(f"{len(CASES) + 1} planted kernel files named; none changed")
        print("bare cu memcheck ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
