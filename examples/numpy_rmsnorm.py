"""A Python candidate in numpy: the two RMSNorm stages of every decoder layer, in float32.

    driftscope run --model synthetic:llama-tiny --candidate py:examples/numpy_rmsnorm.py \
        --fill reference --mode both

Every other stage is left to the reference (--fill reference): a candidate declares only what it
computes. docs/python.md explains the class and its plan.
"""

import numpy as np

import driftscope as ds


class NumpyRmsnorm(ds.Candidate):
    name = "numpy-rmsnorm"
    description = "RMSNorm in numpy, float32 accumulation"
    storage = "f32"
    ops = ["RMSNorm"]
    version = "1.0"

    def plan(self, cfg, kind):
        if kind != "decoder":
            return []
        return [ds.Step("rmsnorm_attn", ["x"], ["attn_norm"]), ds.Step("rmsnorm_ffn", ["residual_1"], ["ffn_norm"])]

    def load(self, cfg, weights):
        self.eps = np.float32(cfg.norm_eps)
        self.attn_w = [weights.layer(l, "attn_norm.weight").astype(np.float32) for l in range(cfg.n_layers)]
        self.ffn_w = [weights.layer(l, "ffn_norm.weight").astype(np.float32) for l in range(cfg.n_layers)]

    def run(self, step, ctx, inputs):
        attn = step.name == "rmsnorm_attn"
        x = inputs["x" if attn else "residual_1"].astype(np.float32)
        w = (self.attn_w if attn else self.ffn_w)[ctx.layer]
        rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps)
        return {step.outputs[0]: (x / rms * w).astype(np.float32)}
