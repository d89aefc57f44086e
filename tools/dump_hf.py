#!/usr/bin/env python3
"""Dump an HF transformers model's per-module tensors for `driftscope run --candidate dump:DIR`.

Registers forward hooks on the modules fixtures/dumps/hf-transformers.yaml names, runs the prompt
(step 0) and then one greedy token per decode step with the KV cache, and writes one safetensors
file per forward call (stepN.safetensors) plus tokens.safetensors and mapping.yaml. See
docs/dumps.md. It needs torch, transformers and safetensors; Driftscope itself never does.

    python3 tools/dump_hf.py MODEL_DIR --tokens 1,5,9,42 --decode-steps 2 --out dump/
    driftscope run --model MODEL_DIR --candidate dump:dump/ --decode-steps 2
"""
import argparse
import os
import re
import shutil

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

# Module outputs the mapping reads; @input: a module's first input (the catalog stage before it).
MODULES = re.compile(r"model\.embed_tokens|model\.norm|lm_head|model\.layers\.\d+"
                     r"(\.(input_layernorm|post_attention_layernorm|self_attn\.(q|k|v|o)_proj"
                     r"|self_attn\.(q|k)_norm|mlp\.(gate|up|down)_proj))?")
INPUTS = ("self_attn.o_proj", "post_attention_layernorm", "mlp.down_proj")
MAPPING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "dumps",
                       "hf-transformers.yaml")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="an HF model directory or hub id")
    ap.add_argument("--tokens", required=True, help="the prompt's token ids, e.g. 1,5,9 (pass the same to "
                                                     "driftscope, or let it read tokens.safetensors)")
    ap.add_argument("--decode-steps", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="float32", help="torch dtype to run in (float32, bfloat16, float16); "
                                                      "set the mapping's storage to match")
    args = ap.parse_args()

    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=getattr(torch, args.dtype))
    model.eval()
    captured = {}

    def hook(name):
        def keep(module, inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            captured[name] = out.detach().cpu().contiguous()
            if name.endswith(INPUTS):
                captured[name + "@input"] = inputs[0].detach().cpu().contiguous()
        return keep

    for name, module in model.named_modules():
        if MODULES.fullmatch(name):
            module.register_forward_hook(hook(name))

    ids = [int(t) for t in args.tokens.split(",")]
    os.makedirs(args.out, exist_ok=True)
    save_file({"input_ids": torch.tensor([ids], dtype=torch.int64)}, os.path.join(args.out, "tokens.safetensors"))
    mapping = os.path.join(args.out, "mapping.yaml")
    if not os.path.exists(mapping):
        shutil.copy(MAPPING, mapping)
    inp, past = torch.tensor([ids]), None
    with torch.no_grad():
        for step in range(args.decode_steps + 1):
            captured.clear()
            out = model(input_ids=inp, past_key_values=past, use_cache=True)
            past = out.past_key_values
            save_file(dict(captured), os.path.join(args.out, f"step{step}.safetensors"))
            inp = torch.tensor([[int(out.logits[0, -1].argmax())]])
    print(f"wrote {args.decode_steps + 1} step(s) to {args.out}; run: driftscope run --model {args.model} "
          f"--candidate dump:{args.out} --decode-steps {args.decode_steps}")


if __name__ == "__main__":
    main()
