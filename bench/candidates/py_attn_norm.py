"""The stage tests/plugin's test-rmsnorm serves (attn_norm in f16 storage), in numpy: what
bench_step_overhead times against that C++ plugin."""

import numpy as np

import driftscope as ds


class PyAttnNorm(ds.Candidate):
    name = "py-attn-norm"
    storage = "f16"
    ops = ["RMSNorm"]

    def plan(self, cfg, kind):
        return [ds.Step("rmsnorm", ["x"], ["attn_norm"])] if kind == "decoder" else []

    def load(self, cfg, weights):
        self.eps = np.float32(cfg.norm_eps)
        self.w = [weights.layer(l, "attn_norm.weight").astype(np.float32) for l in range(cfg.n_layers)]

    def run(self, step, ctx, inputs):
        x = inputs["x"].astype(np.float32)
        y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * self.w[ctx.layer]
        return {"attn_norm": y.astype(np.float16)}
