"""Driftscope's Python side: write a candidate in Python (`driftscope.candidate`), read traces
(`driftscope.trace`).

Import path: `<prefix>/share/driftscope/python` for an installed driftscope, `<checkout>/python`
in a source tree. `driftscope run --candidate py:FILE.py` puts it on the candidate's path itself.
"""

__version__ = "1.0.0"

try:
    import numpy  # noqa: F401
except ImportError:
    # The candidate host answers with the fix (python/driftscope/_host.py) instead of a traceback.
    NUMPY_MISSING = True
else:
    NUMPY_MISSING = False
    from .candidate import Candidate, Config, Context, Seq, Step, bf16

__all__ = ["Candidate", "Config", "Context", "Seq", "Step", "bf16", "__version__"]
