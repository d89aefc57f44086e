"""Qwen3.5 / Qwen3-Next's Gated DeltaNet, served by flash-linear-attention's Triton kernels: the
kernels vLLM and SGLang run for these layers. `fused_recurrent_gated_delta_rule` serves decode steps
(one token), `chunk_gated_delta_rule` the prefill on a GPU; FLA's gated RMSNorm (`rms_norm_gated`)
serves the gated norm after them. Every other stage is left to the reference (--fill reference).

Without a GPU the kernels run in Triton's interpreter (driftscope sets TRITON_INTERPRET=1). There
the chunked kernel cannot run as written (FLA 0.6.0: chunk_delta_h.py calls `.to()` on a loop
index, a plain int under the interpreter), so the prefill runs through the recurrent kernel,
which takes any number of tokens; FLA_GDN_PREFILL=chunk asks for the chunked one anyway (and the
run names that line).

    python3 -m venv v && v/bin/pip install numpy torch fla-core
    driftscope run --model synthetic:qwen35-tiny --candidate py:examples/fla_gdn.py \
        --python v/bin/python --fill reference --mode both --decode-steps 3

Nothing of FLA is copied here: the candidate calls its public functions on the harness's inputs
(docs/python.md; reference-math.md section 3 has the math and the layouts).
"""

import os

import numpy as np
import torch
from fla.modules.norm.fused_norm_gate import rms_norm_gated
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule

import driftscope as ds


class FlaGdn(ds.Candidate):
    name = "fla-gdn"
    description = "Gated DeltaNet by flash-linear-attention's Triton kernels (fused recurrent, chunked, gated norm)"
    storage = "f32"
    ops = ["GatedDeltaNet", "GdnTiledHeads", "RMSNorm"]
    version = "1.0"

    def plan(self, cfg, kind):
        if kind != "gdn":
            return []
        return [ds.Step("gdn", ["q_l2", "k_l2", "conv", "g", "beta", "prev:gdn_state"], ["gdn_out", "gdn_state"]),
                ds.Step("gated_norm", ["gdn_out", "z_gate"], ["gated_norm"])]

    def load(self, cfg, weights):
        self.cfg = cfg
        interpreted = os.environ.get("TRITON_INTERPRET") == "1"
        self.device = "cuda" if torch.cuda.is_available() and not interpreted else "cpu"
        self.prefill = os.environ.get("FLA_GDN_PREFILL") or ("recurrent" if interpreted else "chunk")
        self.norm_w = {l: self.tensor(weights.layer(l, "ssm_norm.weight"))
                       for l, kind in enumerate(cfg.layer_kinds) if kind == "gdn"}

    def tensor(self, a):
        return torch.from_numpy(np.array(a, dtype=np.float32)).to(self.device)  # a copy: inputs may be read-only

    def run(self, step, ctx, inputs):
        if step.name == "gated_norm":
            return self.gated_norm(ctx, inputs)
        return self.delta_rule(ctx, inputs)

    # -- the recurrence: [1, T, heads, dim] tensors, state [1, value heads, d_k, d_v] ----------------
    def delta_rule(self, ctx, inputs):
        c = self.cfg
        T, nk, nv, dk, dv = ctx.n_tokens, c.gdn_k_heads, c.gdn_v_heads, c.gdn_k_dim, c.gdn_v_dim
        q = self.per_value_head(inputs["q_l2"].reshape(T, nk, dk))
        k = self.per_value_head(inputs["k_l2"].reshape(T, nk, dk))
        v = inputs["conv"][:, 2 * nk * dk:].reshape(T, nv, dv)
        prev = inputs["prev:gdn_state"]
        state = np.zeros((nv, dk, dv), np.float32) if prev is None else self.state_in(prev)
        t = lambda a: self.tensor(a).unsqueeze(0)  # [1, T, ...]: one sequence
        # q_l2 is normalised and scaled already: the kernels get scale 1 and no l2norm of their own.
        chunked = T > 1 and self.prefill == "chunk"
        kernel = chunk_gated_delta_rule if chunked else fused_recurrent_gated_delta_rule
        o, final = kernel(t(q), t(k), t(v), g=t(self.log_decay(inputs["g"].reshape(T, nv))), beta=t(inputs["beta"].reshape(T, nv)),
                          scale=1.0, initial_state=t(state), output_final_state=True)
        return {"gdn_out": o[0].reshape(T, nv * dv).cpu().numpy(), "gdn_state": self.state_out(final[0].cpu().numpy())}

    def log_decay(self, g):
        """g is already the log-decay (-exp(A_log) * softplus(...)): the kernels take it as is."""
        return g

    def per_value_head(self, x):
        """Key heads repeated for the value heads that read them: FLA's chunked kernel wants one
        per value head. Value head h reads key head h // rho (grouped, HF) or h % n_k (tiled,
        llama.cpp's GGUF order)."""
        rho = self.cfg.gdn_v_heads // self.cfg.gdn_k_heads
        return np.repeat(x, rho, axis=1) if self.cfg.gdn_head_map == "grouped" else np.tile(x, (1, rho, 1))

    def state_in(self, prev):
        c = self.cfg
        if c.gdn_state_layout == "key_major":
            return prev.reshape(c.gdn_v_heads, c.gdn_k_dim, c.gdn_v_dim)
        return prev.reshape(c.gdn_v_heads, c.gdn_v_dim, c.gdn_k_dim).transpose(0, 2, 1)

    def state_out(self, s):
        c = self.cfg
        if c.gdn_state_layout == "value_major":
            s = s.transpose(0, 2, 1)
        return np.ascontiguousarray(s).reshape(-1, s.shape[-1])

    # -- the gated norm: RMSNorm over each value head, times silu(z) ---------------------------------
    def gated_norm(self, ctx, inputs):
        c = self.cfg
        rows = ctx.n_tokens * c.gdn_v_heads
        x = self.tensor(inputs["gdn_out"].reshape(rows, c.gdn_v_dim))
        z = self.tensor(inputs["z_gate"].reshape(rows, c.gdn_v_dim))
        y = rms_norm_gated(x, z, self.norm_w[ctx.layer], None, activation="swish", eps=c.norm_eps)
        return {"gated_norm": y.reshape(ctx.n_tokens, c.gdn_value_dim).cpu().numpy()}
