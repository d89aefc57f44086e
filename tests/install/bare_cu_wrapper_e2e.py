"""Issue 53 item 5: a repository's kernel file run as it is, through a wrapper `.cu` that includes
it (tests/install/bare_cu/layernorm_wrapper.cu includes repo/layernorm_repo.cu, a file of the shape
public dev/cuda collections have: its own launcher signature, a `__constant__`, a `main` with a
device query and events, a header of helpers next to it, which includes one more that only the
repository's include directory holds). From an installed driftscope, in a fresh directory:
- the map's `include_dirs` hands that directory to the build; without it the build fails naming the
  header;
- `verify` without `--model` runs in the kind's preset (gpt2-tiny, said so) and passes;
- the included file with its grid guard removed: `check`'s memory part names the bad read at the
  *included* file's own line (the rewrite puts it in place between #line directives);
- an edit to the included file alone rebuilds the plugin (the rewrite's depfile): a bias left out
  fails `check` at ln_1, where the first build passed;
- no file of the user's is written (hashes before and after)."""
import json
import os
import shutil
import sys
import tempfile

from install_common import install, sh, sha256

BUILD_DIR, KERNELS = map(os.path.abspath, sys.argv[1:3])


def main():
    work = tempfile.mkdtemp(prefix="ds-wrapper-")
    try:
        ds, _ = install(BUILD_DIR, work)
        user = os.path.join(work, "user")
        shutil.copytree(KERNELS, user)
        wrapper, stage_map = "layernorm_wrapper.cu", "layernorm_wrapper.yaml"
        repo_file = os.path.join(user, "repo", "layernorm_repo.cu")
        src = open(repo_file).read()
        owned = [os.path.join(user, f) for f in (wrapper, stage_map, "repo/layernorm_repo.cu", "repo/repo_common.h",
                                                 "repo/include/repo_math.h")]

        # Without the map's include_dirs the repository's header is not found: the build fails,
        # exit 2, and the compiler's line names it.
        no_dirs = os.path.join(user, "no_include_dirs.yaml")
        open(no_dirs, "w").write("".join(l for l in open(os.path.join(user, stage_map)) if "include_dirs" not in l))
        p = sh(ds, "verify", "--candidate", wrapper, "--stage-map", no_dirs, cwd=user, ok=(2,))
        assert "the build failed" in p.stderr and "repo_math.h" in p.stderr, p.stderr[-3000:]
        os.remove(no_dirs)

        # The file as it is: verify passes, in the kind's own preset.
        report = os.path.join(work, "verify.json")
        p = sh(ds, "verify", "--candidate", wrapper, "--stage-map", stage_map, "--json", report, cwd=user)
        assert "run in synthetic:gpt2-tiny, the layernorm kind's model" in p.stdout, p.stdout
        v = json.load(open(report))
        assert v["verdict"] == "pass" and v["model"] == "synthetic:gpt2-tiny", (v["verdict"], v["model"])
        hashes = {f: sha256(f) for f in owned}

        # Its warp kernel without the grid guard: at a one-token step three of the block's four warps
        # read and write past the row. Named at the included file's line, not the wrapper's.
        guard = "  const int lane = threadIdx.x % 32;\n  if (row >= N) return;\n"
        assert guard in src, "layernorm_repo.cu changed: update the guard this test removes"
        unguarded_dir = os.path.join(work, "unguarded")
        shutil.copytree(user, unguarded_dir)
        unguarded = src.replace(guard, "  const int lane = threadIdx.x % 32;\n")
        open(os.path.join(unguarded_dir, "repo", "layernorm_repo.cu"), "w").write(unguarded)
        read_line = next(i for i, l in enumerate(unguarded.splitlines(), 1) if "sum += x[c];" in l)
        report = os.path.join(work, "unguarded.json")
        # The later parts, without memcheck, crash on the corrupted heap (and blame the memory error).
        sh(ds, "check", "--candidate", wrapper, "--stage-map", stage_map, "--decode-steps", "1", "--json", report,
           cwd=unguarded_dir, ok=(1, 4))
        memory = json.load(open(report))["parts"][0]
        where = f"layernorm_repo.cu:{read_line}"
        assert memory["name"] == "memory errors" and memory["exit_code"] == 1, memory
        assert memory["verdict"].startswith("ln_1 of layer 0, step 1"), memory["verdict"]
        assert all(w in memory["verdict"] for w in (where, "out-of-bounds read", "layernorm_warp_kernel")), \
            f"wanted the bad read at {where}: {memory['verdict']}"

        # One build dir, kept: the first check builds and passes; the included file alone is edited
        # (the bias left out) and the next check rebuilds and fails at ln_1.
        edited_dir = os.path.join(work, "edited")
        shutil.copytree(user, edited_dir)
        trace_dir = os.path.join(work, "edited-build")
        sh(ds, "check", "--candidate", wrapper, "--stage-map", stage_map, "--decode-steps", "1",
           "--trace-dir", trace_dir, cwd=edited_dir)
        bias = "out[row * C + c] = (x[c] - mean) * rstd * weight[c] + bias[c];"
        assert src.count(bias) == 2, "layernorm_repo.cu changed: update the bias this test removes"
        open(os.path.join(edited_dir, "repo", "layernorm_repo.cu"), "w").write(
            src.replace(bias, "out[row * C + c] = (x[c] - mean) * rstd * weight[c];"))
        report = os.path.join(work, "edited.json")
        sh(ds, "check", "--candidate", wrapper, "--stage-map", stage_map, "--decode-steps", "1",
           "--trace-dir", trace_dir, "--json", report, cwd=edited_dir, ok=(1,))
        part = next(part for part in json.load(open(report))["parts"] if part["exit_code"] != 0)
        assert part["verdict"].startswith("ln_1 of layer 0"), part

        for f, h in hashes.items():
            assert sha256(f) == h, f"{f} was written"
        print("bare cu wrapper ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
