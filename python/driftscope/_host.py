"""The process a Python candidate runs in: `python -m driftscope._host MODE FILE [NAME]`.

The harness (candidates/python/python_candidate.cpp) starts it with its requests on fd 3 and
reads the answers on fd 4, so nothing the candidate prints can corrupt them: its stdout goes to
stderr. MODE is `meta` (what the candidate declares), `plan` (its steps for a configuration) or
`serve` (load, then one step per request until the harness closes the pipe).

Every answer starts with a two-byte tag: `ok`, `ex` (the candidate's own code raised: a crash of
the candidate) or `bd` (the file is not a usable candidate: bad input).
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
import traceback

from . import NUMPY_MISSING

if not NUMPY_MISSING:
    import numpy as np

    from . import _wire
    from .candidate import Candidate, Config, Context, Seq, Step, Weights

KINDS = ["decoder", "gpt2", "gdn", "gated_attn", "embed", "head"]
SDK_DIR = os.path.dirname(os.path.abspath(__file__))


class Unusable(Exception):
    """The file cannot serve as a candidate (answered `bd`)."""


def _library_file(path: str) -> bool:
    # Frames a user never wrote: the SDK, the standard library, and the array and kernel
    # libraries whose own code only carries the error up.
    if path.startswith(SDK_DIR) or path.startswith("<"):
        return True
    parts = path.replace("\\", "/").split("/")
    for lib in ("numpy", "torch", "triton"):
        if lib in parts:
            return True
    stdlib = os.path.dirname(os.__file__)
    return path.startswith(stdlib) and "site-packages" not in parts and "dist-packages" not in parts


CANDIDATE_FILE = ""  # the file being served, for "called from" in describe()


def describe(exc: BaseException) -> str:
    """One line: what was raised and where, naming the innermost frame of code a user wrote or
    ships (the candidate's file, or a kernel library's kernel) rather than a traceback. An error
    Triton's interpreter wraps (InterpreterError) is described by what it wraps, at the kernel's
    line, and the line of the candidate's file that led there."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    frames = [f for f in traceback.extract_tb(root.__traceback__) if not _library_file(f.filename)]
    if not frames:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _library_file(f.filename)]
    where = ""
    if frames:
        f = frames[-1]
        where = f" at {f.filename}:{f.lineno} (in {f.name})"
        mine = [g for g in traceback.extract_tb(exc.__traceback__)
                if os.path.abspath(g.filename) == CANDIDATE_FILE and (g.filename, g.lineno) != (f.filename, f.lineno)]
        if mine:
            where += f", called from {mine[-1].filename}:{mine[-1].lineno}"
    if os.environ.get("DRIFTSCOPE_PY_TRACEBACK"):
        traceback.print_exception(exc, file=sys.stderr)
    def first_line(e):
        text = str(e).strip().splitlines()
        return f"{type(e).__name__}: {text[0] if text else ''}"
    what = first_line(exc) if root is exc else f"{type(exc).__name__}: {first_line(root)}"
    if root is not exc and type(exc).__name__ == "InterpreterError":
        where += " (a kernel Triton's interpreter cannot run as written)"
    return what + where


# Under `--sandbox` (docs/sandbox.md) the kernel already stops exec, sockets and writes outside the
# sandbox's dir; this names them. An audit hook (PEP 578) sees every attempt the candidate's Python
# code makes, even one it catches, and the step that made one crashes naming it.
SANDBOX_DIR = os.environ.get("DRIFTSCOPE_SANDBOX", "")
FORBIDDEN = []  # what the candidate tried in the step under way


def _writes(mode, flags) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))


def _inside(path) -> bool:
    full = os.path.realpath(path)
    return any(full == d or full.startswith(d + os.sep) for d in (os.path.realpath(SANDBOX_DIR), "/dev"))


def _sandbox_hook(event, args):
    what = None
    if event == "os.system":
        what = f"os.system({args[0]!r})"
    elif event in ("os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen", "os.fork", "os.forkpty"):
        what = f"{event}({args[0]!r})" if args else event
    elif event == "socket.__new__" and len(args) > 1 and args[1] != getattr(__import__("socket"), "AF_UNIX", 1):
        what = f"socket(family {args[1]})"
    elif event == "open" and isinstance(args[0], (str, bytes)) and _writes(args[1], args[2] if len(args) > 2 else 0):
        path = os.fsdecode(args[0])
        if not _inside(path):
            what = f"open({path!r}) for writing"
    if what:
        FORBIDDEN.append(what)
        raise PermissionError(f"driftscope sandbox: {what} is forbidden (docs/sandbox.md)")


def _has_gpu() -> bool:
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def _autotune_without_timing() -> bool:
    """Under Triton's interpreter an autotuned kernel cannot time its configurations (the
    benchmarker is a GPU driver's, and the interpreter has none: "0 active drivers"), and the
    timings would mean nothing anyway. Each autotuner keeps the first of its configurations that
    its own pruning leaves, as it does when only one is left. False where Triton lacks the hook."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return False
    prune = getattr(Autotuner, "prune_configs", None)
    if prune is None or getattr(prune, "_driftscope_first_only", False):
        return prune is not None

    def first_config_only(self, kwargs, *rest):
        return prune(self, kwargs, *rest)[:1]

    first_config_only._driftscope_first_only = True
    Autotuner.prune_configs = first_config_only
    return True


def load_file(path: str):
    if not os.path.isfile(path):
        raise Unusable(f"py:{path}: no such file")
    global CANDIDATE_FILE
    CANDIDATE_FILE = os.path.abspath(path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    stem = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(f"driftscope_candidate_{stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise Unusable(f"{e.filename}:{e.lineno}: syntax error: {e.msg}")
    except ImportError as e:
        raise Unusable(f"py:{path}: importing it failed: {describe(e)}; is the package installed for "
                       f"{sys.executable}? (--python or DRIFTSCOPE_PYTHON choose another Python)")
    return module


def candidate_classes(module):
    # A class that says `abstract = True` in its own body is a base for others, not a candidate.
    found = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, Candidate) and v is not Candidate
             and v.__module__ == module.__name__ and not vars(v).get("abstract", False)]
    return {(c.name or c.__name__): c for c in found}


def pick(path: str, name: str):
    classes = candidate_classes(load_file(path))
    if not classes:
        raise Unusable(f"py:{path}: defines no subclass of driftscope.Candidate")
    if not name:
        if len(classes) != 1:
            raise Unusable(f"py:{path} defines {len(classes)} candidates ({', '.join(classes)}): "
                           f"pick one with py:{path}:NAME")
        name = next(iter(classes))
    if name not in classes:
        raise Unusable(f"py:{path} has no candidate '{name}' (it has: {', '.join(classes)})")
    return name, classes[name], list(classes)


def _kind_bits(cand, method) -> int:
    bits = 0
    for k, kind in enumerate(KINDS):
        if method(cand, kind):
            bits |= 1 << k
    return bits


def answer_meta(path: str, name: str) -> bytes:
    name, cls, names = pick(path, name)
    cand = cls()
    storage = getattr(cand, "storage", "f32")
    if storage not in _wire.DTYPES:
        raise Unusable(f"py:{path}:{name}: storage '{storage}' is not one of {', '.join(_wire.DTYPES)}")
    top_k, experts = cand.moe_limits()
    import numpy
    w = _wire.Writer(b"ok").str(name).str(cand.description or "").u64(_wire.DTYPES.index(storage))
    w.strings([str(op) for op in cand.ops]).str(cand.unavailable() or "")
    w.u64(_kind_bits(cand, type(cand).batches)).u64(_kind_bits(cand, type(cand).batch_order_varies))
    w.u64(int(top_k)).u64(int(experts)).str(str(cand.version))
    from . import __version__
    w.str(f"driftscope-python {__version__}, Python {sys.version.split()[0]}, numpy {numpy.__version__}")
    w.strings(names)
    return w.bytes()


def _as_step(s, where: str) -> Step:
    if isinstance(s, Step):
        return s
    if isinstance(s, (tuple, list)) and len(s) == 3:
        return Step(str(s[0]), [str(i) for i in s[1]], [str(o) for o in s[2]])
    raise TypeError(f"{where} returned {s!r}: a plan is a list of driftscope.Step(name, inputs, outputs)")


def answer_plan(path: str, name: str, request: bytes) -> bytes:
    _, cls, _ = pick(path, name)
    r = _wire.Reader(request)
    config = Config.from_json(r.str())
    kinds = [r.u64() for _ in range(r.u64())]
    cand = cls()
    w = _wire.Writer(b"ok").u64(len(kinds))
    for k in kinds:
        steps = [_as_step(s, f"plan(config, '{KINDS[k]}')") for s in (cand.plan(config, KINDS[k]) or [])]
        w.u64(k).u64(len(steps))
        for s in steps:
            w.str(s.name).strings(list(s.inputs)).strings(list(s.outputs))
    return w.bytes()


def _to_wire_array(value, step: str, output: str):
    """numpy, torch or anything array-like, as something Writer.tensor takes."""
    if hasattr(value, "bits"):
        return value
    if type(value).__module__.startswith("torch"):
        import torch  # the candidate already imported it
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            from .candidate import bf16
            return bf16(value.view(torch.int16).numpy().view("uint16"))
        value = value.numpy()
    a = np.asarray(value)
    if a.dtype.kind not in "fi" or a.dtype not in (np.float64, np.float32, np.float16, np.int32):
        raise TypeError(f"step {step}: output '{output}' has dtype {a.dtype}; the harness takes float64, float32, "
                        "float16, int32 or driftscope.bf16")
    return a





def serve(path: str, name: str, fin, fout) -> None:
    _, cls, _ = pick(path, name)
    config = Config.from_json(_wire.Reader(_wire.recv(fin)).str())

    def fetch(weight: str):
        _wire.send(fout, _wire.Writer(b"wt").str(weight).bytes())
        reply = _wire.recv(fin)
        return _wire.Reader(reply, 1).tensor() if reply[:1] == b"t" else None

    if "triton" in sys.modules and _interpreting():
        untimed = _autotune_without_timing()
        print("triton: interpreted on the CPU (TRITON_INTERPRET=1: no GPU here)"
              + ("; autotuned kernels run their first configuration, untimed" if untimed else ""),
              file=sys.stderr, flush=True)
    try:
        cand = cls()
        cand.load(config, Weights(fetch))
        if FORBIDDEN:
            raise PermissionError(f"driftscope sandbox: {FORBIDDEN[0]} is forbidden (docs/sandbox.md)")
        _wire.send(fout, b"ok")
    except Exception as e:
        _wire.send(fout, _wire.Writer(b"ex").str(f"load: {_forbidden_or(describe(e))}").bytes())
        return
    while True:
        try:
            msg = _wire.recv(fin)
        except EOFError:
            return
        FORBIDDEN.clear()
        try:
            reply = run_step(cand, config, msg)
            if FORBIDDEN:  # tried, and the candidate caught the error: still the step's finding
                raise PermissionError(f"driftscope sandbox: {FORBIDDEN[0]} is forbidden (docs/sandbox.md)")
        except Exception as e:
            reply = _wire.Writer(b"ex").str(_forbidden_or(describe(e))).bytes()
        _wire.send(fout, reply)


def _forbidden_or(text: str) -> str:
    """What the sandbox stopped, first, when the candidate tried something: the error it raised
    then may be any other (a file it then could not read, say)."""
    return f"the sandbox blocked {FORBIDDEN[0]}: {text}" if FORBIDDEN else text


def run_step(cand, config, msg: bytes) -> bytes:
    r = _wire.Reader(msg)
    step = Step(r.str(), r.strings(), r.strings())
    step_no, layer, pos0, n_tokens = r.i64(), r.i64(), r.i64(), r.i64()
    seqs = [Seq(r.i64(), r.i64(), r.i64(), r.i64(), r.i64(), bool(r.u64()), r.i64()) for _ in range(r.u64())]
    inputs = {}
    for _ in range(r.u64()):
        key = r.str()
        inputs[key] = r.tensor()
    ctx = Context(config, step_no, layer, pos0, n_tokens, seqs)
    got = cand.run(step, ctx, inputs)
    if not isinstance(got, dict):
        raise TypeError(f"run() of step {step.name} returned {type(got).__name__}; it returns a dict of output "
                        f"name -> array ({', '.join(step.outputs)})")
    missing = [o for o in step.outputs if o not in got]
    extra = [o for o in got if o not in step.outputs]
    if missing or extra:
        raise ValueError(f"run() of step {step.name} returned {sorted(got)}; its plan declares {step.outputs}"
                         + (f" (missing: {', '.join(missing)})" if missing else "")
                         + (f" (not declared: {', '.join(extra)})" if extra else ""))
    w = _wire.Writer(b"ok").u64(len(step.outputs))
    for o in step.outputs:
        w.str(o).tensor(_to_wire_array(got[o], step.name, o))
    return w.u64(0).u64(0).bytes()  # no launch records, no device allocations


def main(argv) -> int:
    mode, path = argv[1], argv[2]
    name = argv[3] if len(argv) > 3 else ""
    fin, fout = os.fdopen(3, "rb", buffering=0), os.fdopen(4, "wb", buffering=0)
    os.dup2(2, 1)  # a print() in the candidate lands on stderr, never in the answers
    if NUMPY_MISSING:
        text = (f"py:{path}: {sys.executable} has no numpy, which Driftscope's Python SDK needs (Debian: "
                "python3-numpy); choose a Python that has it with --python or DRIFTSCOPE_PYTHON").encode()
        fout.write(struct.pack("<Q", len(text) + 10) + b"bd" + struct.pack("<Q", len(text)) + text)
        return 0
    if "TRITON_INTERPRET" not in os.environ and not _has_gpu():
        os.environ["TRITON_INTERPRET"] = "1"
    if SANDBOX_DIR:
        sys.addaudithook(_sandbox_hook)
    try:
        if mode == "serve":
            serve(path, name, fin, fout)
            return 0
        request = _wire.recv(fin)
        answer = answer_meta(path, name) if mode == "meta" else answer_plan(path, name, request)
    except Unusable as e:
        answer = _wire.Writer(b"bd").str(str(e)).bytes()
    except Exception as e:
        answer = _wire.Writer(b"ex").str(describe(e)).bytes()
    _wire.send(fout, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
