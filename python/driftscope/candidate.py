"""A Driftscope candidate written in Python (docs/python.md).

A candidate is a subclass of `Candidate` in a file given to `driftscope run --candidate
py:FILE.py[:NAME]`. It declares what the C++ `ds::Candidate` declares (harness/api/candidate.h):
its name, its storage dtype, the ops it serves and, per block kind, its plan: the steps it runs,
each naming its inputs and the catalogue stages it produces. The harness sends it one step at a
time; `run` returns the step's outputs as numpy arrays (torch tensors are taken too).

Everything here is plain Python and numpy: the candidate runs in a process of its own, which the
harness talks to over a pipe, so a crash, a hang or a stray print never reaches the harness.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Dict, List, Optional

import numpy as np


@dataclasses.dataclass
class Step:
    """One launch or fused group of the plan: the inputs it reads, the stages it writes.

    Input names follow harness/api/candidate.h: "x", "<stage>", "cache:<stage>",
    "prev:<stage>", "tokens"."""

    name: str
    inputs: List[str]
    outputs: List[str]


@dataclasses.dataclass
class Seq:
    """One sequence of a batched call (candidate.h, SeqSpan)."""

    seq: int
    row0: int
    n_tokens: int
    pos0: int
    cache_row0: int
    fresh: bool
    state_slot: int


@dataclasses.dataclass
class Context:
    """Where a step runs: model step (0: the prefill), layer (-1: embed or head), first position
    and token count; `seqs` is empty unless the call serves a batch."""

    config: "Config"
    step: int
    layer: int
    pos0: int
    n_tokens: int
    seqs: List[Seq]


class Config:
    """The model's configuration as the harness resolved it (harness/api/model_config.h): every
    field by its C++ name (cfg.hidden, cfg.n_heads, cfg.norm_eps, cfg.layer_kinds, ...)."""

    def __init__(self, fields: dict):
        self._fields = dict(fields)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls(json.loads(text))

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"the model configuration has no field '{name}' (it has: {', '.join(sorted(fields))})")

    def as_dict(self) -> dict:
        return dict(self._fields)

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def gdn_key_dim(self) -> int:
        return self.gdn_k_heads * self.gdn_k_dim

    @property
    def gdn_value_dim(self) -> int:
        return self.gdn_v_heads * self.gdn_v_dim

    @property
    def gdn_conv_dim(self) -> int:
        return 2 * self.gdn_key_dim + self.gdn_value_dim

    def block_kind(self, layer: int) -> str:
        return self.layer_kinds[layer]

    def __repr__(self) -> str:
        return f"Config({self.name}: {self.n_layers} layers, hidden {self.hidden})"


class bf16:
    """An output stored as bfloat16 (numpy has no such dtype): wraps float values rounded to
    bfloat16 (round to nearest even), or raw bfloat16 bits given as uint16."""

    def __init__(self, values):
        a = np.asarray(values)
        if a.dtype == np.uint16:
            self.bits = np.ascontiguousarray(a)
        else:
            f = np.ascontiguousarray(a, dtype=np.float32)
            u = f.view(np.uint32).astype(np.uint64)
            rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
            # NaN stays NaN (rounding could carry a NaN's payload into infinity).
            rounded = np.where(np.isnan(f), (u >> 16) | 0x40, rounded)
            self.bits = rounded.astype(np.uint16)
        self.shape = self.bits.shape


class Candidate:
    """Subclass this. Class attributes declare what the candidate is; methods do the work.

    name        what --candidate py:FILE.py:NAME selects (default: the class name)
    description one line for listings and traces
    storage     the dtype activations are stored in between steps: "f32", "f16", "bf16", "f64"
                (inputs arrive in it; bf16 inputs arrive as float32 holding bf16 values)
    ops         the ops it serves, by their names in `driftscope candidates --ops`
                ("RMSNorm", "SwiGLU", "GatedDeltaNet", ...); the capability gate checks them
    version     the candidate's own version, recorded in every trace
    abstract    True in a class's own body: a base for other candidates, never offered itself
    """

    name: Optional[str] = None
    description: str = ""
    storage: str = "f32"
    ops: List[str] = []
    version: str = "0"

    def unavailable(self) -> str:
        """Why this candidate cannot run on this machine ("" when it can)."""
        return ""

    def batches(self, kind: str) -> bool:
        """Whether run() takes every sequence of a batch in one call for blocks of `kind`."""
        return False

    def batch_order_varies(self, kind: str) -> bool:
        return False

    def moe_limits(self):
        """(largest top-k, most experts) its MoE kernels serve; 0 is no limit."""
        return (0, 0)

    def plan(self, config: Config, kind: str) -> List[Step]:
        """The steps of one block kind ("decoder", "gpt2", "gdn", "gated_attn", "embed",
        "head"); an empty list leaves the kind to --fill reference."""
        raise NotImplementedError(f"{type(self).__name__}.plan")

    def load(self, config: Config, weights: "Weights") -> None:
        """Called once before the first step. `weights[name]` fetches one weight on demand."""

    def run(self, step: Step, ctx: Context, inputs: Dict[str, Optional[np.ndarray]]) -> Dict[str, object]:
        """Runs one step; returns every name of step.outputs mapped to an array. An input that
        does not exist yet (a prev: state before the first step) is None."""
        raise NotImplementedError(f"{type(self).__name__}.run")


class Weights:
    """The model's weights, fetched from the harness by name as the candidate asks for them and
    kept: `weights["blk.0.attn_norm.weight"]`, `weights.layer(0, "attn_norm.weight")`."""

    def __init__(self, fetch):
        self._fetch = fetch
        self._cache: Dict[str, np.ndarray] = {}

    def get(self, name: str):
        if name not in self._cache:
            t = self._fetch(name)
            if t is None:
                return None
            t.setflags(write=False)
            self._cache[name] = t
        return self._cache[name]

    def __getitem__(self, name: str) -> np.ndarray:
        t = self.get(name)
        if t is None:
            raise KeyError(f"the model has no weight '{name}'")
        return t

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def layer(self, layer: int, role: str) -> np.ndarray:
        return self[f"blk.{layer}.{role}"]
