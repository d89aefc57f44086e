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
# the catalog stage before the module).
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
                   "linear_attn.out_proj")),
}
MODULES["qwen2"] = MODULES["llama"]
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
    if args.forced is not None and len(args.forced) < args.decode_steps:
        ap.error(f"--decode-tokens gives {len(args.forced)} token(s) for {args.decode_steps} decode step(s)")
    return args


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


def layer_cache(cache, layer):
    """A Gated DeltaNet layer's (conv_state, recurrent_state) from the cache, whichever layout the
    transformers version keeps: lists on the cache, or per-layer objects."""
    conv, rec = getattr(cache, "conv_states", None), getattr(cache, "recurrent_states", None)
    if conv is not None and rec is not None:
        conv, rec = conv[layer], rec[layer]
    elif getattr(cache, "layers", None) is not None:
        per_layer = cache.layers[layer]
        conv, rec = getattr(per_layer, "conv_states", None), getattr(per_layer, "recurrent_states", None)
    if conv is None or rec is None:
        sys.exit(f"cannot find the conv/recurrent state of layer {layer} in {type(cache).__name__}")
    return conv, rec


def main(argv=None):
    args = parse_args(argv)
    # Imported here so that --help and a syntax check need none of them.
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(args.model)
    family = family_of(config.model_type)
    mapping = args.mapping or os.path.join(MAPPINGS, f"hf-{family}.yaml")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype))
    model.eval()
    modules, inputs = MODULES[family]
    modules = re.compile(modules)
    captured = {}

    def keep(name, t):
        captured[name] = t.detach().clone()  # a hooked tensor may be reused or changed in place later

    def hook(name):
        def save(module, ins, output):
            out = output[0] if isinstance(output, tuple) else output
            if family == "qwen35" and name.endswith("self_attn.q_proj"):
                # [query | gate] per head: the catalog's q and attn_gate.
                halves = out.view(*out.shape[:-1], -1, 2, config.head_dim)
                keep(name + ".q", halves[..., 0, :].flatten(-2))
                keep(name + ".gate", halves[..., 1, :].flatten(-2))
            keep(name, out)
            if name.endswith(inputs):
                keep(name + "@input", ins[0])
        return save

    for name, module in model.named_modules():
        if modules.fullmatch(name):
            module.register_forward_hook(hook(name))
    gdn_layers = [i for i, t in enumerate(getattr(config, "layer_types", None) or []) if t == "linear_attention"]

    os.makedirs(args.out, exist_ok=True)
    copy_mapping(mapping, args.out, args.force)
    save_file({"input_ids": torch.tensor([args.prompt], dtype=torch.int64)},
              os.path.join(args.out, "tokens.safetensors"))
    inp, past, fed = torch.tensor([args.prompt]), None, []
    with torch.no_grad():
        for step in range(args.decode_steps + 1):
            captured.clear()
            out = model(input_ids=inp, past_key_values=past, use_cache=True)
            past = out.past_key_values
            for layer in gdn_layers:
                conv, rec = layer_cache(past, layer)
                # HF keeps [batch, conv_dim, K] and [batch, heads, d_k, d_v]: rows oldest first.
                keep(f"model.layers.{layer}.linear_attn.conv_state", conv[0].transpose(0, 1).contiguous())
                keep(f"model.layers.{layer}.linear_attn.recurrent_state", rec[0])
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
