"""Runs the h5py example of docs/trace-format.md against a fresh trace, so the docs stay true."""
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
script = os.path.join(tmp, "example.py")
open(script, "w").write(blocks[0])
out = subprocess.run([sys.executable, script, trace], capture_output=True, text=True)
print(out.stdout, out.stderr)
assert out.returncode == 0
assert "residual_1" in out.stdout
