"""Issue 35's must-show: a kernel file written for nvcc (tests/install/standard_cuda/layernorm.cu:
<<<>>>, extern __shared__, cooperative-groups tiles with shfl_down and cg::reduce, __ldcs/__stcs,
float4 loads, a global atomicAdd) builds unmodified against an installed SDK, runs inside
synthetic:gpt2-tiny and a GGUF fixture with --fill reference (exit 0), and the same file with a
planted off-by-one is exit 1 at its stage, the report naming the line of the author's file."""
import json
import os
import re
import shutil
import sys
import tempfile

from install_common import install, sh, sha256

BUILD_DIR, PROJECT, FIXTURE = sys.argv[1:4]


def build(proj, prefix):
    sh("cmake", "-S", proj, "-B", os.path.join(proj, "build"), f"-DCMAKE_PREFIX_PATH={prefix}")
    sh("cmake", "--build", os.path.join(proj, "build"))
    return os.path.join(proj, "build", "libstd_layernorm.so")


def main():
    work = tempfile.mkdtemp(prefix="ds-stdcuda-")
    try:
        ds, prefix = install(BUILD_DIR, work)
        proj = os.path.join(work, "std-layernorm")
        shutil.copytree(PROJECT, proj)
        model = os.path.join(work, os.path.basename(FIXTURE))
        shutil.copy(FIXTURE, model)
        cu = os.path.join(proj, "layernorm.cu")

        before = sha256(cu)
        lib = build(proj, prefix)
        if sha256(cu) != before:
            sys.exit("FAILED: the build changed layernorm.cu")
        print("layernorm.cu built unmodified (sha256 the same before and after the build)")
        for m in ("synthetic:gpt2-tiny", model):
            p = sh(ds, "run", "--model", m, "--candidate", lib, "--fill", "reference", "--mode", "both",
                   "--decode-steps", "1", cwd=work)
            print(f"on {os.path.basename(m)}: {p.stdout.strip().splitlines()[-1]}")

        # The planted off-by-one: the shared-memory tree's `tid < stride` as `tid <= stride`. Thread
        # `stride` then updates a slot thread 0 reads in the same barrier phase: a race, which the
        # hazard checker reports at the line of the author's file.
        src = open(cu).read()
        bad = src.replace("if (tid < stride && ", "if (tid <= stride && ")
        assert bad != src, "layernorm.cu changed: update the planted off-by-one"
        line = next(i for i, text in enumerate(bad.splitlines(), 1) if "tid <= stride" in text)
        open(cu, "w").write(bad)
        planted = sha256(cu)
        lib = build(proj, prefix)
        if sha256(cu) != planted:
            sys.exit("FAILED: the build changed the planted layernorm.cu")
        for m in ("synthetic:gpt2-tiny", model):
            report = os.path.join(work, "race.json")
            p = sh(ds, "run", "--model", m, "--candidate", lib, "--fill", "reference", "--simt-racecheck",
                   "--json", report, cwd=work, ok=(1,))
            with open(report) as f:
                stages = json.load(f)["stages"]
            races = [s for s in stages if s["status"] == "race"]
            if not races or (races[0]["step"], races[0]["layer"], races[0]["stage"]) != (0, 0, "ln_1"):
                sys.exit(f"FAILED: the off-by-one was not reported at ln_1 of layer 0:\n{p.stdout}")
            where = f"layernorm.cu:{line}"
            if where not in races[0]["note"] or where not in p.stdout:
                sys.exit(f"FAILED: the report does not name {where}:\n{races[0]['note']}\n{p.stdout}")
            print(f"planted off-by-one on {os.path.basename(m)}: exit 1, race at ln_1 of layer 0, "
                  f"reported at {where}")
        print("standard cuda ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
