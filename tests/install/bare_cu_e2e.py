"""Issue 38 item 4: `driftscope verify --candidate FILE.cu --stage-map MAP`, a bare kernel file as a
code generator writes it (tests/install/bare_cu/my_rmsnorm.cu), verified by an installed driftscope
run from a fresh directory: the correct kernel passes (exit 0, the same verdict twice; `check`
takes the same pair); a planted
read of shared memory nothing wrote is exit 1, `uninit` at attn_norm with the line of the copy it
was planted in; a bad map, a missing entry, an entry with another signature and a compile error
are exit 2 naming the field, the function or the file:line. No .cu is ever written."""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

from install_common import install, sh, sha256

BUILD_DIR, KERNELS = map(os.path.abspath, sys.argv[1:3])


def main():
    work = tempfile.mkdtemp(prefix="ds-barecu-")
    try:
        ds, prefix = install(BUILD_DIR, work)
        user = os.path.join(work, "user")  # the loop's own directory: nothing of Driftscope's in it
        shutil.copytree(KERNELS, user)
        good = os.path.join(user, "my_rmsnorm.cu")
        src = open(good).read()

        def variant(name, old, new, marker=None):
            text = src.replace(old, new)
            assert text != src, f"my_rmsnorm.cu changed: update the {name} variant"
            path = os.path.join(user, name)
            open(path, "w").write(text)
            return path, next(i for i, l in enumerate(text.splitlines(), 1) if (marker or new) in l)

        # The tree starts one level too high: it adds in the half of the shared buffer no thread wrote.
        uninit, uninit_line = variant("my_rmsnorm_uninit.cu", "stride = blockDim.x / 2;", "stride = blockDim.x;",
                                      "partial[threadIdx.x + stride]")
        wrong_sig, sig_line = variant("my_rmsnorm_double_eps.cu", "int cols, float eps) {\n  const size_t",
                                      "int cols, double eps) {\n  const size_t", "double eps")
        typo, typo_line = variant("my_rmsnorm_typo.cu", "partial[threadIdx.x] = acc;", "partial[threadIdx.x] = acc_;")
        # Host code as a repository's file has it (a device query, timing events, cuBLAS and cuBLASLt
        # handles: the SIMT runtime has those) and calls it does not have (managed memory, a device
        # reset, a cuBLAS GEMV): every missing one is named at its line in one build error.
        host_api, _ = variant("my_rmsnorm_host_api.cu", "#include <stdexcept>",
                              "#include <cublasLt.h>\n#include <cublas_v2.h>\n#include <stdexcept>",
                              "#include <cublasLt.h>")
        text = open(host_api).read().replace(
            "  float *d_x = nullptr, *d_w = nullptr, *d_y = nullptr;\n",
            "  float *d_x = nullptr, *d_w = nullptr, *d_y = nullptr;\n"
            "  cudaDeviceProp prop;\n"
            "  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));\n"
            "  cudaEvent_t start;\n"
            "  CUDA_CHECK(cudaEventCreate(&start));\n"
            "  cublasHandle_t handle;\n"
            "  cublasCreate(&handle);\n"
            "  float* managed = nullptr;\n"
            "  CUDA_CHECK(cudaMallocManaged(&managed, 64));\n"
            "  cublasLtHandle_t lt;\n"
            "  cublasLtCreate(&lt);\n"
            "  cublasSgemv(handle, CUBLAS_OP_N, 0, 0, nullptr, nullptr, 1, nullptr, 1, nullptr, nullptr, 1);\n"
            "  cudaGraph_t graph;\n"
            "  if (rows < 0) CUDA_CHECK(cudaGraphCreate(&graph, 0));\n")
        open(host_api, "w").write(text)
        host_lines = {f: next(i for i, l in enumerate(text.splitlines(), 1) if f + "(" in l)
                      for f in ("cudaMallocManaged", "cublasSgemv", "cudaGraphCreate")}
        maps = {
            "rmsnorm.yaml": None,
            "unknown_kind.yaml": None,
            "extra_field.yaml": "kind: rmsnorm\nentry: my_rmsnorm_forward\nstages: [attn_norm]\n",
            "no_entry.yaml": "kind: rmsnorm\n",
            "bf16.yaml": "kind: rmsnorm\nentry: my_rmsnorm_forward\ndtype: bf16\n",
            "f16_rmsnorm.yaml": "kind: rmsnorm\nentry: my_rmsnorm_forward\ndtype: f16\n",
            "missing_function.yaml": "kind: rmsnorm\nentry: rmsnorm_not_here\n",
            "no_such_include_dir.yaml": "kind: rmsnorm\nentry: my_rmsnorm_forward\ninclude_dirs: [., no/such/dir]\n",
        }
        for name, text in maps.items():
            if text is not None:
                open(os.path.join(user, name), "w").write(text)
        cus = [good, uninit, wrong_sig, typo, host_api]
        hashes = {cu: sha256(cu) for cu in cus}

        def verify(cu, stage_map, wd, ok, json_name=None, fill=("--fill", "reference")):
            cmd = [ds, "verify", "--model", "synthetic:llama-tiny", "--candidate", os.path.basename(cu),
                   "--stage-map", stage_map, *fill, "--seed", "3", "--work-dir", wd]
            if json_name:
                cmd += ["--json", json_name]
            p = sh(*cmd, cwd=user, ok=ok)
            return p, (json.load(open(os.path.join(user, json_name))) if json_name else None)

        # Map errors: exit 2 before any build, naming the file and the field.
        for stage_map, wanted in (("unknown_kind.yaml", ["field 'kind'", "'conv2d'",
                                                           "rmsnorm, gemv, rope, swiglu, layernorm, gelu, residual, embedding, attention, qk_norm, qkv, gated_norm, conv, l2norm, gdn_gates, gdn"]),
                                  ("extra_field.yaml", ["unknown field 'stages'"]),
                                  ("no_entry.yaml", ["field 'entry' is missing"]),
                                  ("bf16.yaml", ["field 'dtype'", "'bf16' is neither f32"]),
                                  ("f16_rmsnorm.yaml", ["field 'dtype'", "the rmsnorm kind has no f16 variant",
                                                        "layernorm, gelu, residual"]),
                                  ("no_such_include_dir.yaml", ["no_such_include_dir.yaml:3", "field 'include_dirs'",
                                                                "no/such/dir is not a directory"])):
            p, _ = verify(good, stage_map, os.path.join(work, "wd-map"), (2,))
            if not all(w in p.stderr for w in [stage_map] + wanted):
                sys.exit(f"FAILED: {stage_map}: the error does not name {wanted}:\n{p.stderr}")
            print(f"{stage_map}: exit 2, {p.stderr.strip().splitlines()[0]}")

        # What the build needs: an installed SDK (a build tree's driftscope has none) and cmake.
        p = sh(os.path.join(BUILD_DIR, "harness", "driftscope"), "verify", "--model", "synthetic:llama-tiny",
               "--candidate", "my_rmsnorm.cu", "--stage-map", "rmsnorm.yaml", cwd=user, ok=(2,))
        if "runs from a build tree" not in p.stderr or "cmake --install" not in p.stderr:
            sys.exit(f"FAILED: a build tree's driftscope does not say it has no installed SDK:\n{p.stderr}")
        p = subprocess.run([ds, "verify", "--model", "synthetic:llama-tiny", "--candidate", "my_rmsnorm.cu",
                            "--stage-map", "rmsnorm.yaml"], cwd=user, capture_output=True, text=True,
                           env=dict(os.environ, PATH=os.path.join(work, "no-such-dir")), timeout=600)
        if p.returncode != 2 or "cmake was not found" not in p.stderr:
            sys.exit(f"FAILED ({p.returncode}): no cmake on the PATH is not said:\n{p.stdout}\n{p.stderr}")
        print("a build tree's driftscope and a PATH without cmake: exit 2, each saying so")

        # The correct kernel: a pass, recorded as the .cu and its map; the same verdict again.
        wd = os.path.join(work, "wd-good")
        p, v = verify(good, "rmsnorm.yaml", wd, (0,), "v1.json")
        if v["verdict"] != "pass" or v["findings"] or v["candidate"] != "my_rmsnorm.cu" \
                or v["stage_map"] != "rmsnorm.yaml" or v["candidate_build"]["entry"] != "my_rmsnorm_forward" \
                or not os.path.exists(v["candidate_build"]["plugin"]):
            sys.exit(f"FAILED: the correct kernel's verdict:\n{json.dumps(v, indent=1)[:3000]}\n{p.stdout}")
        twin = v["candidate_build"]["plugin"].replace(".so", "_checked.so")
        if not os.path.exists(twin):
            sys.exit(f"FAILED: no checked twin {twin} beside the built plugin")
        # The build says which flavours it builds, and how long it took.
        if "for the CPU only, the plugin and its checked twin (no nvcc flavour)" not in p.stdout \
                or not re.search(r"^built in \d+ s$", p.stdout, re.M):
            sys.exit(f"FAILED: the build does not say its flavours and its time:\n{p.stdout}")
        # The second time without --fill: a bare .cu (one kind of stage, always) has the reference fill
        # the rest, says so before the build, and the verdict is the same.
        p, v2 = verify(good, "rmsnorm.yaml", wd, (0,), "v2.json", fill=())
        if v2 != v:
            sys.exit("FAILED: the second verify of the same kernel and seed (no --fill) wrote another verdict")
        said = "my_rmsnorm.cu computes attn_norm, ffn_norm only (a rmsnorm kernel): the reference fills"
        if not 0 <= p.stdout.find(said) < p.stdout.find("driftscope verify:"):
            sys.exit(f"FAILED: without --fill the .cu's fill is not said first:\n{p.stdout}")
        print(f"my_rmsnorm.cu: exit 0, verdict pass, the same twice (the second without --fill, filled by default); "
              f"built {v['candidate_build']['plugin']}")
        # An explicit --fill none: the one-stage kernel is refused, and the refusal says what to add.
        p = sh(ds, "verify", "--model", "synthetic:llama-tiny", "--candidate", "my_rmsnorm.cu", "--stage-map",
               "rmsnorm.yaml", "--fill", "none", "--seed", "3", "--work-dir", wd, cwd=user, ok=(3,))
        if "VERIFY REFUSED" not in p.stdout or "--fill reference" not in p.stdout:
            sys.exit(f"FAILED: the refusal of a one-stage kernel does not say to add --fill reference:\n{p.stdout}")
        print("--fill none: exit 3, the refusal naming --fill reference")

        # A file named as a target CMake keeps for itself (clean.cu, all.cu, test.cu ...) is a project
        # like any other: it configures (the target is clean_kernel).
        p = sh(ds, "new-candidate", "clean", "--kernel", "rmsnorm", cwd=user)
        p = sh("cmake", "-S", "clean", "-B", os.path.join("clean", "build"), f"-DCMAKE_PREFIX_PATH={prefix}",
               "-Dclean_kernel_CUDA=OFF", cwd=user)
        if "libclean_kernel.so" not in open(os.path.join(user, "clean", "README.md")).read():
            sys.exit("FAILED: the project named clean does not build libclean_kernel.so")
        print("a project named clean: configures, as clean_kernel")
        # `check` takes the same pair (built in --trace-dir DIR/candidate: here verify's, up to date).
        p = sh(ds, "check", "--model", "synthetic:llama-tiny", "--candidate", "my_rmsnorm.cu", "--stage-map",
               "rmsnorm.yaml", "--fill", "reference", "--seed", "3", "--decode-steps", "1", "--trace-dir", wd,
               "--json", "c.json", cwd=user)
        c = json.load(open(os.path.join(user, "c.json")))
        if c["verdict"] != "PASS" or c["candidate"] != "my_rmsnorm.cu" \
                or c["candidate_build"]["plugin"] != v["candidate_build"]["plugin"]:
            sys.exit(f"FAILED: check of the .cu:\n{json.dumps({k: c[k] for k in c if k != 'parts'}, indent=1)}\n{p.stdout}")
        print(f"check my_rmsnorm.cu: exit 0, {p.stdout.strip().splitlines()[-1]}")

        # The planted read of unwritten shared memory: uninit at attn_norm, at the line it was planted.
        p, v = verify(uninit, "rmsnorm.yaml", os.path.join(work, "wd-uninit"), (1,), "bad.json")
        found = [f for f in v["findings"] if f["kind"] == "uninit" and f["stage"] == "attn_norm"]
        where = f"my_rmsnorm_uninit.cu:{uninit_line}"
        if not found or not any(l.endswith(where) for l in found[0]["evidence"].get("read_lines", [])):
            sys.exit(f"FAILED: no uninit at attn_norm read at {where}:\n{json.dumps(v['findings'], indent=1)[:3000]}")
        print(f"my_rmsnorm_uninit.cu: exit 1, uninit at attn_norm read at {where}; "
              f"findings {sorted({(f['kind'], f['stage']) for f in v['findings']})}")

        # Build errors: exit 2, the compiler's or our message naming the function and the user's file:line.
        p, _ = verify(good, "missing_function.yaml", wd, (2,))
        if "has no function rmsnorm_not_here" not in p.stderr or "missing_function.yaml" not in p.stderr:
            sys.exit(f"FAILED: a missing entry is not named:\n{p.stderr}")
        print("missing_function.yaml: exit 2, " + next(l for l in p.stderr.splitlines() if "has no function" in l))
        p, _ = verify(wrong_sig, "rmsnorm.yaml", os.path.join(work, "wd-sig"), (2,))
        where = f"my_rmsnorm_double_eps.cu:{sig_line}"
        if where not in p.stderr or "not as the rmsnorm glue calls it" not in p.stderr:
            sys.exit(f"FAILED: an entry with another signature is not named at {where}:\n{p.stderr}")
        print(f"my_rmsnorm_double_eps.cu: exit 2, the entry named at {where}")
        p, _ = verify(typo, "rmsnorm.yaml", os.path.join(work, "wd-typo"), (2,))
        where = f"my_rmsnorm_typo.cu:{typo_line}"
        if where not in p.stderr or "acc_" not in p.stderr:
            sys.exit(f"FAILED: the compile error is not shown at {where}:\n{p.stderr}")
        print(f"my_rmsnorm_typo.cu: exit 2, the compiler's error at {where}")

        p, _ = verify(host_api, "rmsnorm.yaml", os.path.join(work, "wd-host"), (2,))
        for f, line in host_lines.items():
            if f"my_rmsnorm_host_api.cu:{line}: {f}" not in p.stderr:
                sys.exit(f"FAILED: {f} is not named at my_rmsnorm_host_api.cu:{line} in one build error:\n{p.stderr}")
        if "3 function(s) the SIMT CPU runtime does not provide" not in p.stderr:
            sys.exit(f"FAILED: the build error does not count the 3 missing functions:\n{p.stderr}")
        for provided in ("cudaGetDeviceProperties", "cudaEventCreate", "cublasCreate", "cublasLtCreate"):
            if provided in p.stderr:
                sys.exit(f"FAILED: {provided}, which the SIMT runtime provides, is named as missing:\n{p.stderr}")
        print(f"my_rmsnorm_host_api.cu: exit 2, the three missing host calls named at their lines in one error, "
              f"none of the four provided ones")

        for cu in cus:
            if sha256(cu) != hashes[cu]:
                sys.exit(f"FAILED: verify changed {cu}")
        print(f"{len(cus)} .cu files unchanged (sha256)")
        print("bare cu ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
