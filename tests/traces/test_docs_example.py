"""Runs every h5py example of docs/trace-format.md against a fresh trace, so the docs stay true."""
import os
import re
import subprocess
import sys
import tempfile

DS, DOC = sys.argv[1], sys.argv[2]
text = open(DOC).read()
blocks = re.findall(r"```python\n(.*?)```", text, re.S)
assert blocks, "docs/trace-format.md has no ```python block"
tmp = tempfile.mkdtemp(prefix="ds_docs_")
trace = os.path.join(tmp, "run.h5")
subprocess.run([DS, "run", "-m", "synthetic:qwen2-tiny", "-c", "mutant:chain-add-idx", "--mode", "both", "-o", trace],
               check=False, capture_output=True)
printed = ""
for k, block in enumerate(blocks):
    script = os.path.join(tmp, f"example{k}.py")
    open(script, "w").write(block)
    out = subprocess.run([sys.executable, script, trace], capture_output=True, text=True)
    print(out.stdout, out.stderr)
    assert out.returncode == 0, f"python block {k} of {DOC} failed"
    printed += out.stdout
assert "residual_1" in printed  # the summary example names the failing stage
assert "dsk_simt::" in printed  # the launches example names the mutant's kernels
