"""Python candidates that break in every way tests/cli/test_python_candidates.py checks: planted
numerical bugs the judge must name at their stage, and contract breaks (a raise, a hang, a print,
a wrong shape or dtype, NaN, a dead process) that must end as a C++ plugin's would."""

import os
import signal
import sys
import time

import numpy as np

import driftscope as ds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
from numpy_rmsnorm import NumpyRmsnorm  # noqa: E402


class RmsnormBase(NumpyRmsnorm):
    """The example's RMSNorm (examples/numpy_rmsnorm.py), with its weight picked by one method a
    planted bug may override."""

    abstract = True

    def run(self, step, ctx, inputs):
        role = "attn_norm" if step.name == "rmsnorm_attn" else "ffn_norm"
        x = inputs["x" if role == "attn_norm" else "residual_1"].astype(np.float32)
        rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return {step.outputs[0]: (x / rms * self.weight(ctx, role)).astype(np.float32)}

    def weight(self, ctx, role):
        return (self.attn_w if role == "attn_norm" else self.ffn_w)[ctx.layer]


class Correct(RmsnormBase):
    name = "correct"


class LayerZeroWeight(RmsnormBase):
    """Planted: every layer's FFN norm reads layer 0's weight (an index bug)."""

    name = "layer-zero-weight"

    def weight(self, ctx, role):
        return self.ffn_w[0] if role == "ffn_norm" else self.attn_w[ctx.layer]


class DecodeStale(RmsnormBase):
    """Planted: decode steps reuse the prefill's last row (a cache bug): only step 1 on is wrong."""

    name = "decode-stale"

    def run(self, step, ctx, inputs):
        out = super().run(step, ctx, inputs)
        key = (step.name, ctx.layer)
        if ctx.step == 0:
            self.last = getattr(self, "last", {})
            self.last[key] = out[step.outputs[0]][-1:].copy()
        else:
            out[step.outputs[0]] = self.last[key]
        return out


class Raises(RmsnormBase):
    name = "raises"

    def run(self, step, ctx, inputs):
        if ctx.layer == 1:
            raise ValueError("planted failure in layer 1")
        return super().run(step, ctx, inputs)


class WrongThenRaises(RmsnormBase):
    """Planted: every FFN norm 1.5x too large (a wrong stage in layer 0), then a raise in layer 1."""

    name = "wrong-then-raises"

    def run(self, step, ctx, inputs):
        if ctx.layer == 1:
            raise ValueError("planted failure in layer 1")
        out = super().run(step, ctx, inputs)
        if "ffn_norm" in out:
            out["ffn_norm"] = out["ffn_norm"] * 1.5
        return out


class Hangs(RmsnormBase):
    name = "hangs"

    def run(self, step, ctx, inputs):
        if ctx.layer == 1:
            time.sleep(3600)
        return super().run(step, ctx, inputs)


class Prints(RmsnormBase):
    """Correct, but chatty on stdout: none of it may reach the harness's messages or its output."""

    name = "prints"

    def run(self, step, ctx, inputs):
        print("prints: step", step.name, "layer", ctx.layer, "x" * 5000)
        os.write(1, b"raw bytes on fd 1\n")
        return super().run(step, ctx, inputs)


class WrongShape(RmsnormBase):
    name = "wrong-shape"

    def run(self, step, ctx, inputs):
        out = super().run(step, ctx, inputs)
        return {k: v[:, :-1] for k, v in out.items()}


class WrongDtype(RmsnormBase):
    name = "wrong-dtype"

    def run(self, step, ctx, inputs):
        return {k: v.astype(np.int64) for k, v in super().run(step, ctx, inputs).items()}


class MissingOutput(RmsnormBase):
    name = "missing-output"

    def run(self, step, ctx, inputs):
        return {}


class NaNs(RmsnormBase):
    name = "nans"

    def run(self, step, ctx, inputs):
        out = super().run(step, ctx, inputs)
        if ctx.layer == 1 and step.name == "rmsnorm_ffn":
            out["ffn_norm"][0, 3] = np.nan
        return out


class Dies(RmsnormBase):
    name = "dies"

    def run(self, step, ctx, inputs):
        if ctx.layer == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().run(step, ctx, inputs)


class MissingWeight(RmsnormBase):
    name = "missing-weight"

    def load(self, cfg, weights):
        super().load(cfg, weights)
        self.extra = weights["blk.0.no_such.weight"]


class UnknownOp(RmsnormBase):
    name = "unknown-op"
    ops = ["RMSNorm", "FlashMLA"]


class Memoized(RmsnormBase):
    """A cheat: the first answer for a (step, layer, launch) is kept and returned whatever the
    inputs are later, so a rerun on other inputs gets the old outputs (verify's `cached`)."""

    name = "memoized"

    def run(self, step, ctx, inputs):
        memo = self.__dict__.setdefault("memo", {})
        key = (step.name, ctx.step, ctx.layer)
        if key not in memo:
            memo[key] = super().run(step, ctx, inputs)
        return {k: v.copy() for k, v in memo[key].items()}


class Batched(RmsnormBase):
    """Takes every sequence of a batch in one call (rows stacked; RMSNorm is row by row)."""

    name = "batched"

    def batches(self, kind):
        return kind == "decoder"

    def run(self, step, ctx, inputs):
        rows = sum(q.n_tokens for q in ctx.seqs) if ctx.seqs else ctx.n_tokens
        assert inputs["x" if step.name == "rmsnorm_attn" else "residual_1"].shape[0] == rows
        return super().run(step, ctx, inputs)


class NeighbourRow(Batched):
    """Planted batch bug: in a batched call each sequence's first row is normalised with the
    previous sequence's last row in its place (a row offset off by one)."""

    name = "neighbour-row"

    def run(self, step, ctx, inputs):
        key = "x" if step.name == "rmsnorm_attn" else "residual_1"
        x = inputs[key].copy()
        for q in ctx.seqs[1:]:
            x[q.row0] = inputs[key][q.row0 - 1]
        return super().run(step, ctx, dict(inputs, **{key: x}))


class TopTwoExperts(ds.Candidate):
    """MoE kernels whose top-k array holds 2: the gate must refuse a model choosing 4."""

    name = "top-two-experts"
    ops = ["MoeSoftmaxTopK", "MoeNormTopK", "MoeExperts", "RMSNorm"]

    def moe_limits(self):
        return (2, 0)

    def plan(self, cfg, kind):
        return []
