"""Python candidates that try what a sandbox forbids (tests/cli/test_sandbox.py): each computes a
correct RMSNorm and, on the way, writes outside its temp dir, runs a shell or opens a TCP socket;
`tmp` writes only where it may (tempfile, under the sandbox's TMPDIR)."""

import os
import socket
import tempfile

import numpy as np

import driftscope as ds


class Norm(ds.Candidate):
    abstract = True
    ops = ["RMSNorm"]

    def plan(self, cfg, kind):
        return [ds.Step("norm", ["x"], ["attn_norm"])] if kind == "decoder" else []

    def load(self, cfg, weights):
        self.w = [weights.layer(l, "attn_norm.weight") for l in range(cfg.n_layers)]
        self.eps = cfg.norm_eps

    def run(self, step, ctx, inputs):
        self.misbehave()
        x = inputs["x"].astype(np.float64)
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * self.w[ctx.layer]
        return {"attn_norm": y.astype(np.float32)}

    def misbehave(self):
        pass


class Writes(Norm):
    name = "writes"

    def misbehave(self):
        try:  # caught: the sandbox still names it
            with open(os.environ["DS_HOSTILE_FILE"], "w") as f:
                f.write("x")
        except OSError:
            pass


class Shell(Norm):
    name = "shell"

    def misbehave(self):
        os.system("touch " + os.environ["DS_HOSTILE_FILE"])


class Net(Norm):
    name = "net"

    def misbehave(self):
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()


class Tmp(Norm):
    name = "tmp"

    def misbehave(self):
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"allowed")
