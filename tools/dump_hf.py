#!/usr/bin/env python3
"""Dump an HF transformers model's per-module tensors for `driftscope run --candidate dump:DIR`.

Registers forward hooks on the modules fixtures/dumps/hf-<family>.yaml names, runs the prompt
(step 0) and then one token per decode step with the cache, and writes one safetensors file per
forward call (stepN.safetensors) plus tokens.safetensors and mapping.yaml (a copy of the family's
mapping). See docs/dumps.md. Families: Llama/Mistral, Qwen2, Qwen3, GPT-2 and the Qwen3.5 hybrid
(Qwen3_5ForCausalLM, Driftscope's qwen35: q_proj split into query and gate, the Gated
DeltaNet projections and gated norm, recurrent and conv state read from the cache).
It needs torch, transformers (5.x) and safetensors; Driftscope itself never does.

    python3 tools/dump_hf.py MODEL_DIR --tokens 1,5,9,42 --decode-steps 2 --out dump/
    driftscope run --model MODEL_DIR --candidate dump:dump/ --decode-steps 2

--decode-tokens feeds the engine given tokens instead of its own greedy ones: pass the
reference's greedy tokens (a `driftscope run --trace T.h5` records them: `/result` JSON, `tokens`,
the prompt then one per decode step) so that after a legitimate near-tie in f16/bf16 every step
is still judged on the same inputs as the reference's.
"""
import argparse
import filecmp
import inspect
import os
import re
import shutil
import sys

MAPPINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "dumps")
# HF model_type -> Driftscope's family (the mapping fixtures/dumps/hf-<family>.yaml).
FAMILIES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gpt2": "gpt2",
            "qwen3_5": "qwen35", "qwen3_5_text": "qwen35"}
DTYPES = ("float32", "float16", "bfloat16")

# Per family: the modules whose output is saved, and those whose first input is too (NAME@input:
# the catalog stage before the module; Qwen3.5's q_norm@input is the query half per head, as q_proj.q).
LAYERS = r"model\.layers\.\d+"
MODULES = {
    "llama": (rf"model\.embed_tokens|model\.norm|lm_head|{LAYERS}(\.(input_layernorm|post_attention_layernorm"
              r"|self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj))?",
              ("self_attn.o_proj", "post_attention_layernorm", "mlp.down_proj")),
    "gpt2": (r"transformer\.drop|transformer\.ln_f|lm_head|transformer\.h\.\d+(\.(ln_1|ln_2|attn\.c_attn"
             r"|attn\.c_proj|mlp\.c_fc|mlp\.c_proj))?",
             ("attn.c_proj", "ln_2", "mlp.c_proj")),
    "qwen35": (rf"model\.embed_tokens|model\.norm|lm_head|{LAYERS}(\.(input_layernorm|post_attention_layernorm"
                  r"|self_attn\.(q|k|v|o)_proj|self_attn\.(q|k)_norm|mlp\.(gate|up|down)_proj"
                  r"|linear_attn\.(in_proj_qkv|in_proj_z|in_proj_a|in_proj_b|norm|out_proj)))?",
                  ("self_attn.o_proj", "post_attention_layernorm", "mlp.down_proj", "linear_attn.norm",
                   "linear_attn.out_proj", "self_attn.q_norm")),
}
MODULES["qwen2"] = MODULES["llama"]
# Where each family's decoder layers are: a model whose module names differ (a multimodal wrapper's
# model.language_model.layers, a renamed port) would otherwise be dumped with every layer missing.
LAYER_MODULES = {"gpt2": "transformer.h"}
MODULES["qwen3"] = (MODULES["llama"][0].replace(r"|mlp\.", r"|self_attn\.(q|k)_norm|mlp\."), MODULES["llama"][1])


def ids(text, what):
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        sys.exit(f"{what}: expected token ids separated by commas, got '{text}'")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="an HF model directory or hub id")
    ap.add_argument("--tokens", required=True, help="the prompt's token ids, e.g. 1,5,9 (driftscope reads them "
                                                     "back from tokens.safetensors)")
    ap.add_argument("--decode-steps", type=int, default=0, help="decode steps after the prompt (default 0)")
    ap.add_argument("--decode-tokens", help="the tokens fed at decode steps 1.., e.g. the reference's greedy "
                                            "tokens; default: the engine's own greedy token")
    ap.add_argument("--out", required=True, help="the dump directory")
    ap.add_argument("--dtype", default="float32", choices=DTYPES,
                    help="the dtype the model runs and the tensors are saved in (default float32). The shipped "
                         "mappings say `storage: auto`: driftscope judges the dump in this dtype")
    ap.add_argument("--mapping", help="the mapping to copy as mapping.yaml (default: "
                                      "fixtures/dumps/hf-<family>.yaml by the model's model_type)")
    ap.add_argument("--force", action="store_true", help="replace an existing, different mapping.yaml")
    args = ap.parse_args(argv)
    args.prompt = ids(args.tokens, "--tokens")
    args.forced = ids(args.decode_tokens, "--decode-tokens") if args.decode_tokens else None
    if not args.prompt:
        ap.error("--tokens: the prompt has no token")
    if args.decode_steps < 0:
        ap.error(f"--decode-steps: {args.decode_steps} is negative")
    if args.forced is not None and len(args.forced) < args.decode_steps:
        ap.error(f"--decode-tokens gives {len(args.forced)} token(s) for {args.decode_steps} decode step(s)")
    if args.mapping and not os.path.isfile(args.mapping):
        ap.error(f"--mapping: {args.mapping} is not a file")
    return args


def check_vocab(args, vocab):
    """Token ids the embedding cannot look up: named here rather than as an index error deep in torch."""
    for what, toks in (("--tokens", args.prompt), ("--decode-tokens", args.forced or [])):
        bad = [t for t in toks if not 0 <= t < vocab]
        if bad:
            sys.exit(f"{what}: token id(s) {bad} outside the model's vocabulary of {vocab}")


def family_of(model_type):
    if model_type not in FAMILIES:
        sys.exit(f"model_type '{model_type}' is not covered (known: {', '.join(sorted(FAMILIES))}); "
                 "write a mapping for its module names (docs/dumps.md)")
    return FAMILIES[model_type]


def copy_mapping(src, out, force):
    """mapping.yaml beside the dump: never silently keep a different one from an earlier dump."""
    dst = os.path.join(out, "mapping.yaml")
    if os.path.exists(dst) and not filecmp.cmp(src, dst, shallow=False) and not force:
        sys.exit(f"{dst} exists and differs from {src}: the dump would be read through it; "
                 "remove it or pass --force to replace it")
    shutil.copy(src, dst)


def stale_steps(out, decode_steps):
    """stepN.safetensors an earlier, longer dump left in the directory: judged with more decode
    steps they would silently mix two dumps."""
    step = re.compile(r"step(\d+)\.safetensors")
    found = [(int(m.group(1)), f) for f in os.listdir(out) if (m := step.fullmatch(f))]
    return [f for n, f in sorted(found) if n > decode_steps]


def unhooked_layers(hooked, family, n_layers):
    """The decoder layers of the model whose module the family's hooks did not find; hooked: the
    names hooked."""
    prefix = LAYER_MODULES.get(family, "model.layers")
    return [f"{prefix}.{i}" for i in range(n_layers) if f"{prefix}.{i}" not in hooked]


def first_state(states):
    """A layer's state 0 where the cache keeps several per layer (transformers 5.2x: a dict or list
    by state index), else the tensor itself."""
    if isinstance(states, dict):
        return states.get(0)
    if isinstance(states, (list, tuple)):
        return states[0] if states else None
    return states


def layer_cache(cache, layer):
    """A Gated DeltaNet layer's (conv_state, recurrent_state) from the cache after a call, as the
    cache holds them ([batch, conv_dim, K] and [batch, heads, d_k, d_v]), whichever layout the
    transformers version keeps: getters on the cache (5.2x), lists on the cache, or per-layer objects
    (whose states may be kept by state index)."""
    conv = rec = None
    if hasattr(cache, "get_conv_state") and hasattr(cache, "get_recurrent_state"):
        conv, rec = cache.get_conv_state(layer), cache.get_recurrent_state(layer)
    elif getattr(cache, "conv_states", None) is not None and getattr(cache, "recurrent_states", None) is not None:
        conv, rec = cache.conv_states[layer], cache.recurrent_states[layer]
    elif getattr(cache, "layers", None) is not None:
        per_layer = cache.layers[layer]
        conv = first_state(getattr(per_layer, "conv_states", None))
        rec = first_state(getattr(per_layer, "recurrent_states", None))
    if conv is None or rec is None:
        sys.exit(f"cannot find the conv/recurrent state of layer {layer} in {type(cache).__name__}")
    if len(conv.shape) != 3 or len(rec.shape) != 4 or conv.shape[0] != 1 or rec.shape[0] != 1:
        sys.exit(f"layer {layer}: the cache's conv state {list(conv.shape)} / recurrent state {list(rec.shape)} "
                 "are not [1, conv_dim, K] / [1, heads, d_k, d_v] (a batch of one): this transformers version "
                 "keeps them otherwise; the dump would be wrong")
    return conv, rec


def split_query_gate(out, head_dim):
    """Qwen3.5's q_proj output packs [query | gate] per head: the catalog's q and attn_gate, each
    [..., heads * head_dim] (reshape only, so that a torch tensor and a numpy array both split)."""
    lead = tuple(out.shape[:-1])
    halves = out.reshape(*lead, -1, 2, head_dim)
    return halves[..., 0, :].reshape(*lead, -1), halves[..., 1, :].reshape(*lead, -1)


def gdn_states(conv, rec):
    """The cache's [1, conv_dim, K] conv state as K rows of conv_dim, oldest first (the catalog's
    row layout; the mapping's `rows: last` keeps the last K-1), and its [1, heads, d_k, d_v]
    recurrent state without the batch."""
    return conv[0].T, rec[0]


def cache_keyword(forward):
    """The keyword a model's forward takes its cache by: `cache` in newer transformers 5.x, which
    deprecate `past_key_values`; `past_key_values` where `cache` is not yet a parameter."""
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def returned_cache(out):
    """The cache a forward call returns, under the name this transformers version gives it (reading
    `past_key_values` from a newer output warns that it is deprecated)."""
    keys = out.keys()
    for key in ("cache", "past_key_values"):
        if key in keys:
            return out[key]
    sys.exit(f"the model's output has no cache (fields: {', '.join(keys)}); was use_cache refused?")


def main(argv=None):
    args = parse_args(argv)
    # Imported here so that --help and a syntax check need none of them.
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(args.model)
    family = family_of(config.model_type)
    text = config.get_text_config()  # a multimodal config keeps the decoder's settings in its text config
    if getattr(text, "vocab_size", None):
        check_vocab(args, text.vocab_size)
    mapping = args.mapping or os.path.join(MAPPINGS, f"hf-{family}.yaml")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    model.eval()
    modules, inputs = MODULES[family]
    modules = re.compile(modules)
    captured = {}

    def keep(name, t):
        # A copy: a hooked tensor may be a view the model reuses or changes in place later, and
        # safetensors writes only contiguous tensors.
        captured[name] = t.detach().clone(memory_format=torch.contiguous_format)

    def hook(name):
        def save(module, ins, output):
            out = output[0] if isinstance(output, tuple) else output
            if family == "qwen35" and name.endswith("self_attn.q_proj"):
                query, gate = split_query_gate(out, text.head_dim)
                keep(name + ".q", query)
                keep(name + ".gate", gate)
            keep(name, out)
            if name.endswith(inputs):
                keep(name + "@input", ins[0])
        return save

    hooked = set()
    for name, module in model.named_modules():
        if modules.fullmatch(name):
            module.register_forward_hook(hook(name))
            hooked.add(name)
    missing = unhooked_layers(hooked, family, text.num_hidden_layers)
    if missing:
        sys.exit(f"{type(model).__name__} has no module {missing[0]} ({len(missing)} of {text.num_hidden_layers} "
                 f"decoder layers not found): its module names are not the {family} family's; write a mapping "
                 "and hooks for them (docs/dumps.md)")
    gdn_layers = [i for i, t in enumerate(getattr(text, "layer_types", None) or []) if t == "linear_attention"]

    os.makedirs(args.out, exist_ok=True)
    copy_mapping(mapping, args.out, args.force)
    for f in stale_steps(args.out, args.decode_steps):
        os.remove(os.path.join(args.out, f))
        print(f"removed {f} of an earlier dump from {args.out}")
    save_file({"input_ids": torch.tensor([args.prompt], dtype=torch.int64)},
              os.path.join(args.out, "tokens.safetensors"))
    inp, past, fed = torch.tensor([args.prompt]), None, []
    cache_kw = cache_keyword(model.forward)
    with torch.no_grad():
        for step in range(args.decode_steps + 1):
            captured.clear()
            out = model(input_ids=inp, use_cache=True, **{cache_kw: past})
            past = returned_cache(out)
            for layer in gdn_layers:
                conv, rec = gdn_states(*layer_cache(past, layer))
                keep(f"model.layers.{layer}.linear_attn.conv_state", conv)
                keep(f"model.layers.{layer}.linear_attn.recurrent_state", rec)
            save_file(dict(captured), os.path.join(args.out, f"step{step}.safetensors"))
            greedy = int(out.logits[0, -1].argmax())
            nxt = args.forced[step] if args.forced is not None and step < len(args.forced) else greedy
            if nxt != greedy and step < args.decode_steps:
                print(f"step {step + 1}: fed token {nxt} (--decode-tokens); the engine's greedy token is {greedy}")
            fed.append(nxt)
            inp = torch.tensor([[nxt]])
    print(f"wrote {args.decode_steps + 1} step(s) of {family} ({args.dtype}) to {args.out}, decode tokens "
          f"{fed[:args.decode_steps]}; run: driftscope run --model {args.model} --candidate dump:{args.out} "
          f"--decode-steps {args.decode_steps}")


if __name__ == "__main__":
    main()
