"""Issue 53 item 4: every scaffold kind as a bare `.cu` for `check --candidate FILE.cu --stage-map`,
from an installed driftscope. For each kind of the table: `new-candidate --kernel KIND` writes the
kind's starter `KIND.cu`; `check` of that file with a map naming `KIND_forward` passes on a tiny
preset whose model has the kind's stages (the glue of every stage the kind serves, built from the
bare file; a kind glued into two families, on a preset of each); a twin with a planted bug fails
`check`, its first failing part naming the stage (and layer and step) the bug is in, as the table
says. The f16 variant the same way, with a kernel file written for nvcc (`bare_cu/gelu_f16.cu`:
`__half` pointers, `dtype: f16` in its map). One `verify` of the first kind's starter (its build
kept from `check`) passes: the verdict path sees the kinds too. No .cu is written by driftscope
(their SHA-256 before and after)."""
import json
import os
import sys
import tempfile
import shutil

from install_common import install, sh, sha256

BUILD_DIR, KERNELS = map(os.path.abspath, sys.argv[1:3])

# kind, model, the planted bug (text of the starter, its replacement, what it does) and where the
# first failing stage must be: (step, layer, stage), layer -1 the model-level stages'. A kind whose
# glue serves two families runs on both; its bug is planted once. The kind's starter is the kernel,
# or, with a file name, that file of bare_cu/ and its map (FILE.yaml).
KINDS = [
    ("layernorm", "synthetic:gpt2-tiny",
     ("* rstd * w[c] + b[c];", "* rstd * w[c];", "the bias left out"), (0, 0, "ln_1")),
    ("gelu", "synthetic:gpt2-tiny",
     ("0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * (v + 0.044715f * v * v * v)))",
      "0.5f * v * (1.0f + erff(v * 0.70710678f))", "the erf form, not GPT-2's tanh approximation"),
     (0, 0, "gelu")),
    ("residual", "synthetic:gpt2-tiny",
     ("if (i >= n) return;", "if (i >= n - 1) return;", "the last element never written"),
     (0, 0, "residual_1")),
    ("embedding", "synthetic:gpt2-tiny",
     ("wpe[static_cast<long>(pos0 + t) * cols + c]", "wpe[static_cast<long>(t) * cols + c]",
      "the position counted from the call's first token, not from pos0: right in the prefill only"),
     (1, -1, "embed")),
    ("attention", "synthetic:llama-tiny",
     ("const int g = h / (n_heads / n_kv_heads);", "const int g = h % n_kv_heads;",
      "query heads mapped to kv heads modulo, not by group"),
     (0, 0, "attn")),
    ("attention", "synthetic:gpt2-tiny", None, None),
    ("qk_norm", "synthetic:qwen3-tiny",
     ("* inv_rms * w[d];", "* inv_rms * (1.0f + w[d]);", "Qwen3-Next's (1 + w) in a Qwen3"), (0, 0, "q_norm")),
    ("qkv", "synthetic:qwen2-tiny",
     ("= sum + (bias ? bias[r] : 0.0f);", "= sum;", "the bias left out"), (0, 0, "q")),
    ("qkv", "synthetic:gpt2-tiny", None, None),
    ("gated_norm", "synthetic:qwen35-tiny",
     ("* (g / (1.0f + expf(-g)))", "* (1.0f / (1.0f + expf(-g)))", "the gate sigmoid(z), not silu(z)"),
     (0, 0, "gated_norm")),
    # The conv keeps the window's oldest rows for the next step, not its newest.
    ("conv", "synthetic:qwen35-tiny",
     ("window(tokens + r)", "window(r)", "the state kept from the window's start, not its end"),
     (0, 0, "conv_state")),
    # Without the epsilon a near-zero query or key divides by almost nothing: only the tiny-gdn-qk
    # probe feeds one.
    ("l2norm", "synthetic:qwen35-tiny", ("rsqrtf(sum_sq + eps)", "rsqrtf(sum_sq)", "the epsilon left out"),
     (0, 0, "q_l2")),
    # Without dt_bias the decay's softplus is taken of the bare projection: g is off at every token.
    ("gdn_gates", "synthetic:qwen35-tiny", ("const float a = u + dt_bias[h];", "const float a = u;",
                                            "dt_bias left out of the decay"),
     (0, 0, "g")),
    # The recurrence is handed its previous step's state: one that starts each call from zeros
    # passes the prefill and fails the first decode step.
    ("gdn", "synthetic:qwen35-tiny",
     ("  d_state.upload(state, ns);", "  const std::vector<float> zeros(ns, 0.0f);\n  d_state.upload(zeros.data(), ns);",
      "the state from the previous step dropped"),
     (1, 0, "gdn_out")),
    ("gelu_f16.cu", "synthetic:gpt2-tiny",
     ("(v + 0.044715f * v * v * v)", "(v)", "the cube term left out"), (0, 0, "gelu")),
]


def main():
    work = tempfile.mkdtemp(prefix="ds-kinds-")
    try:
        ds, prefix = install(BUILD_DIR, work)
        hashes = {}
        for kind, model, planted, where in KINDS:
            name = kind.removesuffix(".cu")
            good, stage_map = os.path.join(work, f"{name}.cu"), os.path.join(work, f"{name}.yaml")
            if not os.path.exists(good) and kind.endswith(".cu"):
                shutil.copy(os.path.join(KERNELS, kind), good)
                shutil.copy(os.path.join(KERNELS, f"{name}.yaml"), stage_map)
            elif not os.path.exists(good):
                starters = os.path.join(work, f"new-{kind}")
                sh(ds, "new-candidate", starters, "--kernel", kind, cwd=work)
                shutil.copy(os.path.join(starters, f"{kind}.cu"), good)
                open(stage_map, "w").write(f"kind: {kind}\nentry: {kind}_forward\n")
            hashes[good] = sha256(good)

            # One work dir per kernel: a second family's check reuses its build.
            wd = os.path.join(work, f"wd-{name}")
            report = os.path.join(work, f"check-{name}-{model.split(':')[-1]}.json")
            p = sh(ds, "check", "--model", model, "--candidate", good, "--stage-map", stage_map, "--seed", "3",
                   "--decode-steps", "1", "--trace-dir", wd, "--json", report, cwd=work)
            c = json.load(open(report))
            built = c["candidate_build"]
            if c["verdict"] != "PASS" or not name.startswith(built["kind"]) \
                    or built["dtype"] != ("f16" if name.endswith("_f16") else "f32"):
                sys.exit(f"FAILED: check of {name}.cu:\n{p.stdout}")
            print(f"{name}.cu: check on {model}: exit 0, {p.stdout.strip().splitlines()[-1]}")
            if not planted:
                continue
            old, new, what = planted
            src = open(good).read()
            assert src.replace(old, new) != src, f"{name}.cu changed: update its planted bug"
            bad = os.path.join(work, f"{name}_planted.cu")
            open(bad, "w").write(src.replace(old, new))
            hashes[bad] = sha256(bad)

            # The twin, through the same glue: the first part of the battery that fails names the
            # stage (the gelu's erf form passes the plain run, within tolerance, and is named by the
            # probes' bias test).
            wd_bad = os.path.join(work, f"wd-{name}-planted")
            p = sh(ds, "check", "--model", model, "--candidate", bad, "--stage-map", stage_map, "--seed", "3",
                   "--decode-steps", "1", "--trace-dir", wd_bad, "--json", os.path.join(wd_bad, "check.json"),
                   "--fail-fast", cwd=work, ok=(1,))
            parts = json.load(open(os.path.join(wd_bad, "check.json")))["parts"]
            failed = next(x for x in parts if x["exit_code"] != 0)
            step, layer, stage = where
            if not failed["verdict"].startswith(f"{stage} of layer {layer}, step {step} "):
                sys.exit(f"FAILED: {name}.cu with {what}: the first failing part does not name {stage} of layer "
                         f"{layer} at step {step}:\n{p.stdout}")
            print(f"{name}_planted.cu ({what}): exit 1, {p.stdout.strip().splitlines()[-1]}")

        # The f16 kernel under a map without `dtype: f16`: exit 2 at the link, naming the function's
        # line, the f32 signature the glue calls and the dtype that would glue it.
        f32_map = os.path.join(work, "gelu_f32.yaml")
        open(f32_map, "w").write("kind: gelu\nentry: my_gelu_f16\n")
        p = sh(ds, "check", "--model", "synthetic:gpt2-tiny", "--candidate", os.path.join(work, "gelu_f16.cu"),
               "--stage-map", f32_map, "--trace-dir", os.path.join(work, "wd-f32-map"), cwd=work, ok=(2,))
        said = next((l for l in p.stderr.splitlines() if "is there, but not as the gelu glue calls it" in l), "")
        if "gelu_f16.cu:" not in said or "`dtype: f16`" not in said:
            sys.exit(f"FAILED: the f16 entry under an f32 map is not named with the dtype to use:\n{p.stderr}")
        print(f"gelu_f16.cu under an f32 map: exit 2, {said.replace(work + os.sep, '')}")

        # One verify, of the first kind's starter, from the build its check kept.
        kind, model = KINDS[0][0], KINDS[0][1]
        v_json = os.path.join(work, "verify.json")
        p = sh(ds, "verify", "--model", model, "--candidate", os.path.join(work, f"{kind}.cu"), "--stage-map",
               os.path.join(work, f"{kind}.yaml"), "--seed", "3",
               "--work-dir", os.path.join(work, f"wd-{kind}"),
               "--json", v_json, cwd=work)
        v = json.load(open(v_json))
        if v["verdict"] != "pass" or v["findings"]:
            sys.exit(f"FAILED: verify of the {kind} starter:\n{json.dumps(v, indent=1)[:3000]}\n{p.stdout}")
        print(f"verify {kind}.cu on {model}: exit 0, verdict pass")

        for cu, h in hashes.items():
            if sha256(cu) != h:
                sys.exit(f"FAILED: driftscope changed {cu}")
        print(f"{len(hashes)} .cu files unchanged (sha256)")
        print("bare cu kinds ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


main()
