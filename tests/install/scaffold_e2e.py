"""What a kernel author does, with no path into Driftscope's source or build tree: install the
SDK into a fresh prefix, scaffold a candidate project, build it against that prefix only, run it
inside real models, plant a bug, find it, fix it, replay the failing step."""
import json
import os
import re
import shutil
import sys
import tempfile

from install_common import install, sh

BUILD_DIR, FIXTURE, GENERATOR = sys.argv[1:4]


def main():
    work = tempfile.mkdtemp(prefix="ds-sdk-")
    try:
        ds, prefix = install(BUILD_DIR, work)
        model = os.path.join(work, os.path.basename(FIXTURE))
        shutil.copy(FIXTURE, model)  # the user's model file, outside any Driftscope tree
        have_nvcc = os.path.exists("/usr/local/cuda/bin/nvcc") or shutil.which("nvcc")
        for kernel in ("rmsnorm", "gemv", "rope", "swiglu"):
            proj = os.path.join(work, f"my-{kernel}")
            sh(ds, "new-candidate", proj, "--kernel", kernel, cwd=work)
            sh("cmake", "-S", proj, "-B", os.path.join(proj, "build"), "-G", GENERATOR,
               f"-DCMAKE_PREFIX_PATH={prefix}", cwd=work)
            sh("cmake", "--build", os.path.join(proj, "build"), cwd=work)
            lib = os.path.join(proj, "build", f"libmy_{kernel}.so")
            for m in ("synthetic:qwen2-tiny", model):
                p = sh(ds, "run", "--model", m, "--candidate", lib, "--fill", "reference", "--mode", "both",
                       "--decode-steps", "1", "--profile", cwd=work)
                print(f"{kernel} on {os.path.basename(m)}: {p.stdout.strip().splitlines()[-1]}")
                # The plugin's SIMT kernels report their launches with no code of the plugin's own.
                if not re.search(rf"^\S+ -> \S+ +\d+ .* {kernel}_kernel$", p.stdout, re.M) or "emulated" not in p.stdout:
                    sys.exit(f"FAILED: --profile shows no launch of {kernel}_kernel:\n{p.stdout}")
            if have_nvcc:
                cuda = os.path.join(proj, "build", f"libmy_{kernel}_cuda.so")
                if not os.path.exists(cuda):
                    sys.exit(f"FAILED: nvcc is here but {cuda} was not built")
                if os.path.exists("/dev/nvidia0"):
                    p = sh(ds, "run", "--model", model, "--candidate", cuda, "--fill", "reference", "--mode", "both",
                           cwd=work)
                    print(f"{kernel} on a GPU: {p.stdout.strip().splitlines()[-1]}")
                else:
                    p = sh(ds, "gate", "--model", model, "--candidate", cuda, "--fill", "reference", cwd=work, ok=(3,))
                    if "UNAVAILABLE" not in p.stdout or "no CUDA device" not in p.stdout:
                        sys.exit(f"FAILED: the gate should call the CUDA build unavailable here:\n{p.stdout}")
                    print(f"{kernel}: the CUDA flavour compiled; the gate says UNAVAILABLE here (no GPU), running it skipped")

        # A planted bug: the RMSNorm mean taken over n - 1.
        proj = os.path.join(work, "my-rmsnorm")
        cu = os.path.join(proj, "rmsnorm.cu")
        src = open(cu).read()
        bad = src.replace("partial[0] / cols;", "partial[0] / (cols - 1);")
        assert bad != src, "the scaffold's rmsnorm.cu changed: update the planted bug"
        open(cu, "w").write(bad)
        sh("cmake", "--build", os.path.join(proj, "build"))
        lib = os.path.join(proj, "build", "libmy_rmsnorm.so")
        trace = os.path.join(work, "bug.h5")
        for m in ("synthetic:qwen2-tiny", model):
            p = sh(ds, "run", "--model", m, "--candidate", lib, "--fill", "reference", "--mode", "both",
                   "--trace", trace, cwd=work, ok=(1,))
            if not re.search(r"First failing stage: attn_norm of layer 0 at step 0", p.stdout):
                sys.exit(f"FAILED: the planted bug was not named at attn_norm of layer 0:\n{p.stdout}")
        open(cu, "w").write(src)
        sh("cmake", "--build", os.path.join(proj, "build"))
        p = sh(ds, "replay", trace, "--step", "0", "--layer", "0", "--stage", "attn_norm", cwd=work)
        if "replayed:" not in p.stdout or "PASS" not in p.stdout.split("replayed:")[1]:
            sys.exit(f"FAILED: the fixed build does not pass the replay:\n{p.stdout}")
        print("planted bug found at attn_norm of layer 0; the fixed build passes its replay")

        # A planted race: the tree reduction's barrier left out. --race-check reaches the runtime copy
        # inside the plugin (through dlsym), so the stage is a race, not a plain value failure.
        racy = src.replace("    __syncthreads();\n  }\n  const float mean_sq", "  }\n  const float mean_sq")
        assert racy != src, "the scaffold's rmsnorm.cu changed: update the planted race"
        open(cu, "w").write(racy)
        sh("cmake", "--build", os.path.join(proj, "build"))
        p = sh(ds, "run", "--model", "synthetic:qwen2-tiny", "--candidate", lib, "--fill", "reference",
               "--race-check", "2", "--json", os.path.join(work, "race.json"), cwd=work, ok=(1,))
        with open(os.path.join(work, "race.json")) as f:
            races = [s for s in json.load(f)["stages"] if s["status"] == "race"]
        if not races or (races[0]["step"], races[0]["layer"], races[0]["stage"]) != (0, 0, "attn_norm") \
                or "rmsnorm_kernel" not in races[0]["note"]:
            sys.exit(f"FAILED: the planted race was not reported as a race at attn_norm of layer 0:\n{p.stdout}")
        print("planted race in the plugin reported as race at attn_norm of layer 0")

        # The hazard checker loads the scaffold's checked twin: a race on the kernel's static
        # __shared__ array, which the page-fault checker of a plain build cannot see, is named with
        # the lines of both accesses in rmsnorm.cu.
        twin = os.path.join(proj, "build", "libmy_rmsnorm_checked.so")
        if not os.path.exists(twin):
            sys.exit(f"FAILED: the scaffold built no checked twin {twin}")
        report = os.path.join(work, "hazard.json")
        p = sh(ds, "run", "--model", "synthetic:qwen2-tiny", "--candidate", lib, "--fill", "reference",
               "--simt-racecheck", "--decode-steps", "1", "--json", report, cwd=work, ok=(1,))
        with open(report) as f:
            run = json.load(f)
        if os.path.realpath(run.get("checked_twin", "")) != os.path.realpath(twin):
            sys.exit(f"FAILED: the run does not name the checked twin it loaded: {run.get('checked_twin')}")
        races = [s for s in run["stages"] if s["status"] == "race"]
        if not races or (races[0]["step"], races[0]["layer"], races[0]["stage"]) != (0, 0, "attn_norm") \
                or "static shared memory" not in races[0]["note"] or races[0]["note"].count("rmsnorm.cu:") < 2:
            sys.exit(f"FAILED: the checked twin's hazard was not named at attn_norm with two lines:\n{p.stdout}")
        print(f"checked twin: {races[0]['note'][:200]}")
        print("scaffold ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
