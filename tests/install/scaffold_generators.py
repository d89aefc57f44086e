"""The scaffold against an installed SDK, the way a kernel author's machine may differ from ours:
the default generator (Unix Makefiles) and Ninja, each with nvcc found by CMake itself
(CMAKE_CUDA_COMPILER unset) and with no CUDA compiler anywhere; the CUDA flavour is built exactly
when nvcc is usable. Also what the install must carry without a source checkout: the README's
real prefix, debug line info in the plugin, and the shipped policies and dump mappings by name."""
import json
import os
import shutil
import sys
import tempfile

from install_common import install, sh

BUILD_DIR = sys.argv[1]


def without_cuda_env():
    """This environment with no CUDA compiler to find: no PATH entry holding nvcc, no CUDACXX."""
    env = dict(os.environ)
    for var in ("CUDACXX", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDA_HOME"):
        env.pop(var, None)
    dirs = [d for d in env.get("PATH", "").split(os.pathsep) if d and not os.path.exists(os.path.join(d, "nvcc"))]
    env["PATH"] = os.pathsep.join(dirs)
    return env


def with_nvcc_env():
    """nvcc on the PATH, and nothing telling CMake where it is (no CUDACXX, no CMAKE_CUDA_COMPILER)."""
    env = dict(os.environ)
    env.pop("CUDACXX", None)
    if not shutil.which("nvcc", path=env.get("PATH")) and os.path.exists("/usr/local/cuda/bin/nvcc"):
        env["PATH"] = "/usr/local/cuda/bin" + os.pathsep + env.get("PATH", "")
    return env if shutil.which("nvcc", path=env.get("PATH")) else None


def has_line_info(lib, source):
    """DWARF line table of `lib` names `source` (what turns lib.so+0x... into file:line)."""
    p = sh("readelf", "--debug-dump=decodedline", lib)
    return os.path.basename(source) in p.stdout


def main():
    work = tempfile.mkdtemp(prefix="ds-gen-")
    try:
        ds, prefix = install(BUILD_DIR, work)
        proj = os.path.join(work, "my-kernel")
        p = sh(ds, "new-candidate", proj, "--kernel", "rmsnorm")
        readme = open(os.path.join(proj, "README.md")).read()
        if f"-DCMAKE_PREFIX_PATH={prefix}\n" not in readme or f"-DCMAKE_PREFIX_PATH={prefix}\n" not in p.stdout:
            sys.exit(f"FAILED: the scaffold does not print the real install prefix {prefix}:\n{p.stdout}\n{readme}")
        print(f"README and new-candidate name the real prefix {prefix}")

        nvcc_env = with_nvcc_env()
        cases = []  # (name, generator, environment, extra cmake args, CUDA flavour expected)
        for gen in ("Unix Makefiles", "Ninja"):
            if nvcc_env:
                cases.append((f"{gen}, nvcc on the PATH", gen, nvcc_env, [], True))
            cases.append((f"{gen}, no CUDA compiler", gen, without_cuda_env(), [], False))
        if nvcc_env:
            cases.append(("Unix Makefiles, nvcc found, -Dmy_kernel_CUDA=OFF", "Unix Makefiles", nvcc_env,
                          ["-Dmy_kernel_CUDA=OFF"], False))
        else:
            print("no nvcc on this machine: the cases with nvcc are not run")
        for i, (name, gen, env, extra, want_cuda) in enumerate(cases):
            build = os.path.join(work, f"build{i}")
            c = sh("cmake", "-S", proj, "-B", build, "-G", gen, f"-DCMAKE_PREFIX_PATH={prefix}", *extra, env=env)
            sh("cmake", "--build", build, env=env)
            lib = os.path.join(build, "libmy_kernel.so")
            cuda = os.path.join(build, "libmy_kernel_cuda.so")
            if not os.path.exists(lib):
                sys.exit(f"FAILED ({name}): {lib} was not built")
            if os.path.exists(cuda) != want_cuda:
                sys.exit(f"FAILED ({name}): the CUDA flavour {'was not' if want_cuda else 'was'} built\n{c.stdout}")
            if not has_line_info(lib, "rmsnorm.cu"):
                sys.exit(f"FAILED ({name}): {lib} has no line info for rmsnorm.cu (driftscope_add_simt_kernel adds -g)")
            print(f"{name}: configured and built; CUDA flavour {'built' if want_cuda else 'not built'}; "
                  "rmsnorm.cu line info present")

        # The plugin runs, judged by the shipped strict policy found by name (no source checkout).
        lib = os.path.join(work, "build0", "libmy_kernel.so")
        report = os.path.join(work, "strict.json")
        sh(ds, "run", "--model", "synthetic:qwen2-tiny", "--candidate", lib, "--fill", "reference",
           "--policy", "strict", "--json", report, ok=(0, 1))
        policy = json.load(open(report)).get("policy", "")
        if "strict" not in json.dumps(policy):
            sys.exit(f"FAILED: --policy strict did not judge the run with the strict policy: {policy!r}")
        print(f"--policy strict found by name: {policy!r}")
        p = sh(ds, "run", "--model", "synthetic:qwen2-tiny", "--candidate", lib, "--fill", "reference",
               "--policy", "no-such-policy", ok=(2,))
        if "no-such-policy" not in p.stderr or "strict" not in p.stderr:
            sys.exit(f"FAILED: an unknown policy name should list the shipped ones:\n{p.stderr}")

        # The llama.cpp mapping by name: export a trace in llama.cpp's layout, read it back as a dump.
        trace = os.path.join(work, "llama.h5")
        sh(ds, "run", "--model", "synthetic:llama-tiny", "--candidate", "cpu-f16", "--capture", "all",
           "--trace", trace)
        out = os.path.join(work, "as-llama.cpp")
        p = sh(ds, "export", trace, "--mapping", "llama.cpp-llama", "--out", out)
        shipped = os.path.join(prefix, "share", "driftscope", "dumps", "llama.cpp-llama.yaml")
        if not os.path.exists(os.path.join(out, "mapping.yaml")) or f"the shipped {shipped}" not in p.stdout:
            sys.exit(f"FAILED: export --mapping llama.cpp-llama did not use the installed mapping:\n{p.stdout}")
        sh(ds, "run", "--model", "synthetic:llama-tiny", "--candidate", f"dump:{out}", "--mode", "chained")
        print("export --mapping llama.cpp-llama found the installed mapping; the dump reads back and passes")

        # A Python candidate run by the installed driftscope imports the installed SDK, and the
        # installed driftscope.trace reads the trace it wrote (docs/python.md).
        cand = os.path.join(work, "my_norm.py")
        with open(cand, "w") as f:
            f.write(
                "import sys\nimport numpy as np\nimport driftscope as ds\n"
                "print('sdk at', ds.__file__, file=sys.stderr)\n"
                "class MyNorm(ds.Candidate):\n"
                "    ops = ['RMSNorm']\n"
                "    def plan(self, cfg, kind):\n"
                "        return [ds.Step('n', ['x'], ['attn_norm'])] if kind == 'decoder' else []\n"
                "    def load(self, cfg, weights):\n"
                "        self.w = [weights.layer(l, 'attn_norm.weight') for l in range(cfg.n_layers)]\n"
                "        self.eps = cfg.norm_eps\n"
                "    def run(self, step, ctx, inputs):\n"
                "        x = inputs['x'].astype(np.float64)\n"
                "        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * self.w[ctx.layer]\n"
                "        return {'attn_norm': y.astype(np.float32)}\n")
        trace = os.path.join(work, "py.h5")
        p = sh(ds, "run", "--model", "synthetic:qwen2-tiny", "--candidate", "py:my_norm.py", "--fill", "reference",
               "--python", "/usr/bin/python3", "--trace", trace, cwd=work)
        installed_sdk = os.path.join(prefix, "share", "driftscope", "python", "driftscope")
        if f"sdk at {installed_sdk}" not in p.stderr:
            sys.exit(f"FAILED: the Python candidate did not import the installed SDK ({installed_sdk}):\n{p.stderr}")
        reader = ("import sys; sys.path.insert(0, sys.argv[1]); from driftscope.trace import open_trace\n"
                  "t = open_trace(sys.argv[2]); print(t.exit_code, t.run['candidate']['name'], len(t.rows))")
        p = sh("/usr/bin/python3", "-c", reader, os.path.join(prefix, "share", "driftscope", "python"), trace)
        if not p.stdout.startswith("0 MyNorm "):
            sys.exit(f"FAILED: the installed driftscope.trace read {p.stdout!r} from {trace}")
        print(f"py:my_norm.py ran with the installed SDK; driftscope.trace read it: {p.stdout.strip()}")
        print("generators ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
