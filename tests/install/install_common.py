"""What every install test does: run a command and stop with its output when it fails, hash a
file the user owns, and install the build tree into a prefix of a fresh work directory."""
import hashlib
import os
import subprocess
import sys


def sh(*cmd, cwd=None, env=None, ok=(0,)):
    """Runs `cmd`; any exit status outside `ok` ends the test with the command's output."""
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode not in ok:
        sys.exit(f"FAILED ({p.returncode}, wanted {ok}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def install(build_dir, work):
    """`cmake --install` of `build_dir` into WORK/prefix; the installed driftscope and the prefix."""
    prefix = os.path.join(work, "prefix")
    sh("cmake", "--install", build_dir, "--prefix", prefix)
    return os.path.join(prefix, "bin", "driftscope"), prefix
