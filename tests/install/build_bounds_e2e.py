"""Issue 49 items 7 and 13 for a bare .cu: the build `verify --candidate FILE.cu` runs is bounded
and ends with driftscope, run from an installed SDK.

- A malformed DRIFTSCOPE_BUILD_MEMORY is exit 2 naming it, before anything is built.
- A verify killed during its build (its compiler blocked on a FIFO the .cu includes, so the build
  is caught mid-compile, below cmake --build and make or ninja), by SIGKILL or by SIGTERM to its
  process group: within a few seconds no process of the build runs (cmake, make/ninja, the
  compiler: every process with this test's marker in its environment). SIGTERM leaves no temporary
  directory; after SIGKILL the next start of verify removes it.
- `#include "/dev/zero"` under DRIFTSCOPE_BUILD_MEMORY=512M: exit 2 in seconds, saying a process
  of the build ran out of memory and naming the limit and the .cu.
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from install_common import install, sh

BUILD_DIR, KERNELS = map(os.path.abspath, sys.argv[1:3])
MARKER = f"DS_BUILD_BOUNDS_TEST={os.getpid()}"
COMPILERS = ("cc1plus", "cc1", "c++", "g++", "gcc", "clang", "clang++")


def marked():
    """(pid, command name) of every running process with MARKER in its environment."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if MARKER.encode() not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if stat[stat.rindex(")") + 2] != "Z":
            found.append((int(pid), comm))
    return found


def compiling_the_kernel():
    """A compiler of the build on the kernel's rewritten file (not a configure step's probe)."""
    for pid, comm in marked():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if comm in COMPILERS and b".simt" in cmd:
            return True
    return False


def main():
    work = tempfile.mkdtemp(prefix="ds-buildbounds-")
    try:
        ds, _ = install(BUILD_DIR, work)
        user = os.path.join(work, "user")
        shutil.copytree(KERNELS, user)
        src = open(os.path.join(user, "my_rmsnorm.cu")).read()
        fifo = os.path.join(user, "never-written.fifo")
        os.mkfifo(fifo)
        with open(os.path.join(user, "stuck.cu"), "w") as f:
            f.write(f'#include "{fifo}"\n' + src)
        with open(os.path.join(user, "zero.cu"), "w") as f:
            f.write('#include "/dev/zero"\n' + src)
        temp_root = os.path.join(work, "tmp")  # verify's temporary directories, ours alone
        os.mkdir(temp_root)
        key, value = MARKER.split("=")
        env = dict(os.environ, TMPDIR=temp_root, **{key: value})

        def verify_cmd(cu):
            return [ds, "verify", "--model", "synthetic:llama-tiny", "--candidate", cu, "--stage-map", "rmsnorm.yaml",
                    "--fill", "reference"]

        p = sh(*verify_cmd("zero.cu"), cwd=user, env=dict(env, DRIFTSCOPE_BUILD_MEMORY="lots"), ok=(2,))
        if "DRIFTSCOPE_BUILD_MEMORY=lots" not in p.stderr or "building" in p.stdout:
            sys.exit(f"FAILED: a malformed DRIFTSCOPE_BUILD_MEMORY is not named before the build:\n{p.stdout}{p.stderr}")
        print("DRIFTSCOPE_BUILD_MEMORY=lots: exit 2 naming it, nothing built")

        for how in ("SIGKILL", "SIGTERM to the group"):
            with open(os.path.join(work, "killed.log"), "w") as log:
                v = subprocess.Popen(verify_cmd("stuck.cu"), cwd=user, env=env, stdout=log, stderr=log,
                                     start_new_session=True)
            deadline = time.monotonic() + 300
            while not compiling_the_kernel() and v.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if not compiling_the_kernel():
                v.kill()
                sys.exit(f"FAILED: the build never reached the kernel's compile (exit {v.poll()}):\n"
                         + open(os.path.join(work, "killed.log")).read()[-3000:])
            build = marked()
            if how == "SIGKILL":
                os.kill(v.pid, signal.SIGKILL)
            else:
                os.killpg(v.pid, signal.SIGTERM)
            v.wait(timeout=60)
            deadline = time.monotonic() + 5
            while marked() and time.monotonic() < deadline:
                time.sleep(0.05)
            left = marked()
            for pid, _ in left:  # what a failure left does not stay on the machine
                os.kill(pid, signal.SIGKILL)
            if left:
                sys.exit(f"FAILED: {how} of verify during its build left {left} running (the build was {build})")
            dirs = glob.glob(os.path.join(temp_root, "driftscope-verify-*"))
            if how != "SIGKILL":
                if dirs:
                    sys.exit(f"FAILED: {how} left verify's temporary directory {dirs}")
            else:
                if len(dirs) != 1 or f"-{v.pid}-" not in dirs[0]:
                    sys.exit(f"FAILED: after SIGKILL, not one temporary directory named with pid {v.pid}: {dirs}")
                p = sh(ds, "verify", "--model", "synthetic:no-such-preset", env=env, ok=(2,))
                if os.path.exists(dirs[0]) or dirs[0] not in p.stderr:
                    sys.exit(f"FAILED: the next verify did not remove {dirs[0]}, or did not say so:\n{p.stderr}")
            print(f"{how} of verify while {len(build)} processes built the kernel ({sorted({c for _, c in build})}): "
                  "none left, and no temporary directory" + (" after the next start" if how == "SIGKILL" else ""))

        start = time.monotonic()
        p = sh(*verify_cmd("zero.cu"), cwd=user, env=dict(env, DRIFTSCOPE_BUILD_MEMORY="512M"), ok=(2,))
        seconds = time.monotonic() - start
        wanted = ["ran out of memory", "512 MiB of address space", "DRIFTSCOPE_BUILD_MEMORY", "zero.cu"]
        if not all(w in p.stderr for w in wanted) or seconds > 300:
            sys.exit(f"FAILED ({seconds:.0f} s): the /dev/zero build does not name {wanted}:\n{p.stderr}")
        print(f"zero.cu: exit 2 in {seconds:.0f} s, " + next(l for l in p.stderr.splitlines() if "out of memory" in l))
        if marked():
            sys.exit(f"FAILED: processes of the build outlived verify: {marked()}")
        print("build bounds ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
