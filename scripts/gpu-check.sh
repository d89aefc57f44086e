#!/usr/bin/env bash
# The one prepared GPU check (docs/gpu-results.md): GPU time is rare and short here, so everything a
# GPU session should measure is in this script, each step under its own time limit and the whole
# under one budget, logging as it goes so that a run cut off anywhere still leaves its results.
#
#   scripts/gpu-check.sh                  on a machine with an NVIDIA GPU: build what the checks need
#                                         (build-gpu/, this GPU's architecture only, ccache), run them
#   scripts/gpu-check.sh --dry-run        print the plan and exit 0 (what happens without a GPU, too)
#   scripts/gpu-check.sh --bundle DIR [--arch 90]
#                                         build here for one architecture and copy the programs and
#                                         the shared libraries a bare GPU image lacks into DIR
#   scripts/gpu-check.sh --prebuilt DIR   run the checks with DIR's programs (from --bundle): for a
#                                         GPU machine with nvcc and a driver but no -dev packages
#
# Everything lands in $OUT (default gpu-check-out/): log.txt (the whole output, as it goes),
# steps.tsv and runs.tsv (one line per step / per driftscope run, as each ends), bench_kernels.json,
# runs.tar.gz (each run's console output, JSON report and trace, the files of $OUT.runs/), results.json
# and gpu-results.md (a draft in the
# format of docs/gpu-results.md, written by scripts/gpu_check_summary.py after every step).
# GPU_CHECK_FORCE=1 runs every step without a GPU too (to test this script: the cuda steps then
# fail with "no CUDA device"); GPU_CHECK_BUDGET_S changes the budget.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUDGET_S=${GPU_CHECK_BUDGET_S:-480}  # the issue's ceiling is 8 minutes on one H100, build included
MODE=run
BUNDLE_DIR=""
PREBUILT=""
ARCH=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) MODE=dry ;;
    --bundle) MODE=bundle; BUNDLE_DIR=${2:?--bundle needs a directory}; shift ;;
    --prebuilt) PREBUILT=${2:?--prebuilt needs a directory}; shift ;;
    --arch) ARCH=${2:?--arch needs a compute capability such as 90}; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BUILD=${GPU_CHECK_BUILD_DIR:-build-gpu}
TARGETS=(driftscope test_gdn test_harness bench_kernels driftscope-mkfixture)

# Build-time plan, one place: what --bundle and the normal run both build.
# configure_and_build ARCH DIR [RUNNER...]: RUNNER (e.g. a timeout) prefixes both commands.
configure_and_build() {
  local arch=$1 dir=$2
  shift 2
  "$@" cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DDRIFTSCOPE_CUDA=ON >/dev/null &&
    "$@" cmake --build "$dir" -j "$(nproc)" --target "${TARGETS[@]}"
}

# The programs and where each lands in a build tree.
declare -A PROGRAM=([driftscope]=harness/driftscope [test_gdn]=tests/gdn/test_gdn
  [test_harness]=tests/harness/test_harness [bench_kernels]=bench/kernels/bench_kernels
  [driftscope-mkfixture]=reference/tools/driftscope-mkfixture)

if [ "$MODE" = bundle ]; then
  [ -n "$ARCH" ] || { echo "gpu-check: --bundle needs --arch (e.g. 90 for an H100)" >&2; exit 2; }
  start=$(date +%s)
  configure_and_build "$ARCH" "$BUILD" || exit 1
  echo "gpu-check: built ${TARGETS[*]} for sm_$ARCH in $(($(date +%s) - start)) s on $(nproc) cores"
  mkdir -p "$BUNDLE_DIR/bin" "$BUNDLE_DIR/lib"
  for t in "${TARGETS[@]}"; do
    cp "$BUILD/${PROGRAM[$t]}" "$BUNDLE_DIR/bin/" && strip "$BUNDLE_DIR/bin/$t"
  done
  # Every library the programs load except glibc's and the C++ runtime (the GPU image's own are
  # newer, and glibc's parts must come from one glibc) and the driver; CUPTI and the rest travel, since a bare image may have neither -dev packages nor CUPTI.
  for t in "${TARGETS[@]}"; do ldd "$BUNDLE_DIR/bin/$t"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|libutil|libnsl|libanl|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda)\.so' |
    while read -r lib; do cp -L "$lib" "$BUNDLE_DIR/lib/"; done
  echo "$ARCH" >"$BUNDLE_DIR/arch"
  du -sh "$BUNDLE_DIR"
  exit 0
fi

OUT=${OUT:-$ROOT/gpu-check-out}
# Per-run files live beside $OUT and travel in runs.tar.gz: a device call returns only 8 files.
RUNS=${GPU_CHECK_WORK:-$OUT.runs}

GPU_NAME=""
if [ "$MODE" = run ] && command -v nvidia-smi >/dev/null 2>&1; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
fi
[ "$MODE" = run ] && [ -z "$GPU_NAME" ] && [ "${GPU_CHECK_FORCE:-0}" = 1 ] && GPU_NAME="(no GPU: GPU_CHECK_FORCE=1)"
if [ -z "$GPU_NAME" ]; then
  [ "$MODE" = run ] && echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none): skipping every step, nothing is built"
  MODE=dry
fi

# --- the plan: steps in order, each with its limit (seconds) ---------------------------------
STEPS=(facts build parity baseline real_shapes gdn_bitexact cupti fla_gdn bench)
# Their sum is the budget: every step gets its whole limit even when each before it used all of its.
declare -A LIMIT=([facts]=10 [build]=200 [parity]=60 [baseline]=40 [real_shapes]=60 [gdn_bitexact]=15
  [cupti]=35 [fla_gdn]=25 [bench]=35)
declare -A WHAT=(
  [facts]="nvidia-smi (name, driver, memory, compute capability, clocks), nvcc --version, CPU count"
  [build]="cmake -G Ninja -DCMAKE_CUDA_ARCHITECTURES=<this GPU's> -DCMAKE_BUILD_TYPE=RelWithDebInfo (the build CI tests), then ${TARGETS[*]} only (ccache); skipped with --prebuilt"
  [parity]="driftscope run --candidate cuda --mode both --prompt-tokens 8 --decode-steps 4 on every tiny preset, every fixture (GGUF and safetensors) and, on the Qwen3-Next hybrids, every --gdn-variant (plain, inplace = A, ids = B, conv-update = C, conv-update-ids = D), against the reference"
  [baseline]="the same cases with --baseline simt (--baseline-gdn-variant the same) under fixtures/policies/strict.yaml: every cuda/simt divergence"
  [real_shapes]="qwen2.5-0.5b, qwen3-0.6b, llama3.2-1b, gpt2-small with --layers 2: cuda against the reference (both modes) and against simt (--baseline); then llama-wide and qwen3moe-wide written as Q4_K_M GGUFs (driftscope-mkfixture --gguf-type q4_k_m), whose blocks the kernels decode as they read them, likewise"
  [gdn_bitexact]="test_gdn --gtest_filter='GdnCuda.*': fused decode ops A-D equal to the plain ops bit for bit on the device"
  [cupti]="test_harness --gtest_filter='LaunchRecords.CudaCandidate*' and driftscope run --profile (CUPTI launch records, GPU time)"
  [fla_gdn]="examples/fla_gdn.py (flash-linear-attention's Triton GDN kernels) compiled on the GPU: driftscope run --model synthetic:qwen35-tiny --mode both --decode-steps 3 --fill reference, with \$GPU_CHECK_FLA_PYTHON (default: the cli.fla_gdn test's venv in the build tree); skipped, saying so, where that Python lacks torch with CUDA, triton or fla-core (a device machine without the package index has none)"
  [bench]="bench_kernels --benchmark_filter='^cuda/' at the real shapes: time, GB/s and the fraction of the device's peak bandwidth"
)

if [ "$MODE" = dry ]; then
  echo "gpu-check plan (budget ${BUDGET_S} s of wall time; output in \$OUT, default gpu-check-out/):"
  i=1
  for s in "${STEPS[@]}"; do
    echo "  $i. $s (limit ${LIMIT[$s]} s): ${WHAT[$s]}"
    i=$((i + 1))
  done
  echo "gpu-check: dry run: nothing was built or run (exit 0)"
  exit 0
fi

# --- a real run --------------------------------------------------------------------------------
mkdir -p "$OUT" "$RUNS"
: >"$OUT/log.txt"
printf 'step\texit\tseconds\tlimit\n' >"$OUT/steps.tsv"
printf 'step\tcase\texit\tseconds\n' >"$OUT/runs.tsv"
exec > >(tee -a "$OUT/log.txt") 2>&1
T0=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
PY=$(command -v python3 || true)

summarize() {
  tar czf "$OUT/runs.tar.gz" -C "$(dirname "$RUNS")" "$(basename "$RUNS")" 2>/dev/null
  [ -n "$PY" ] && "$PY" "$ROOT/scripts/gpu_check_summary.py" "$OUT" "$RUNS" || true
}

# step NAME FUNCTION: runs FUNCTION under min(its limit, what is left of the budget).
STEP_DEADLINE=0
step() {
  local name=$1 fn=$2 limit=${LIMIT[$1]} remaining
  remaining=$(left)
  [ "$remaining" -lt "$limit" ] && limit=$remaining
  if [ "$limit" -le 0 ]; then
    echo "== $name: not run (the ${BUDGET_S} s budget is spent)"
    printf '%s\tnot-run\t0\t%s\n' "$name" "${LIMIT[$1]}" >>"$OUT/steps.tsv"
    return
  fi
  echo "== $name (limit $limit s): ${WHAT[$name]}"
  local s0 rc
  s0=$(date +%s)
  STEP_DEADLINE=$((s0 + limit))
  "$fn"
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - s0))" "$limit" >>"$OUT/steps.tsv"
  echo "== $name: exit $rc in $(($(date +%s) - s0)) s"
  summarize
}

# until_deadline CMD...: runs CMD with what is left of the current step's limit.
until_deadline() {
  local t=$((STEP_DEADLINE - $(date +%s)))
  [ "$t" -le 0 ] && return 124
  timeout -k 5 "$t" "$@"
}

# The bundle's libraries first: the GPU image has no HDF5, fmt or yaml-cpp of its own.
[ -n "$PREBUILT" ] && export LD_LIBRARY_PATH="$PREBUILT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
D=""
bin() {
  if [ -n "$PREBUILT" ]; then echo "$PREBUILT/bin/$1"; else echo "$BUILD/${PROGRAM[$1]}"; fi
}

do_facts() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.memory,pcie.link.gen.max \
    --format=csv | tee "$RUNS/facts.csv"
  nvidia-smi | head -20
  /usr/local/cuda/bin/nvcc --version | tail -2
  echo "cpus: $(nproc)"
}

do_build() {
  if [ -n "$PREBUILT" ]; then
    echo "prebuilt programs from $PREBUILT (built for sm_$(cat "$PREBUILT/arch" 2>/dev/null || echo '?'))"
    return 0
  fi
  local cc=$ARCH
  [ -n "$cc" ] || cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
  [ -n "$cc" ] || cc=90
  echo "building for sm_$cc"
  configure_and_build "$cc" "$BUILD" until_deadline
}

# run_case STEP NAME ARGS...: one driftscope run, its JSON report and trace under runs/.
run_case() {
  local step=$1 name=$2
  shift 2
  local s0 rc
  s0=$(date +%s)
  until_deadline "$D" run "$@" --json "$RUNS/$step.$name.json" --trace "$RUNS/$step.$name.h5" \
    --capture "${CAPTURE:-failing}" --only-failures >"$RUNS/$step.$name.txt" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "$step" "$name" "$rc" "$(($(date +%s) - s0))" >>"$OUT/runs.tsv"
  echo "  $name -> exit $rc: $(grep -m1 -E '^(PASS|FAIL|REFUSED|UNAVAILABLE|CRASHED|INCOMPLETE|error)' \
    "$RUNS/$step.$name.txt" || tail -1 "$RUNS/$step.$name.txt")"
  return 0
}

TINY=()
FIXTURES=()
# The qwen35 GGUF keeps its value heads tiled, which the CUDA GDN kernels do not implement (the gate
# refuses GdnTiledHeads); the legacy qwen3next GGUF (grouped) is the hybrid GGUF they run.
HYBRIDS=(synthetic:qwen35-tiny fixtures/models/qwen35-tiny fixtures/legacy/qwen3next-tiny.gguf)
GDN_VARIANTS=(plain inplace ids conv-update conv-update-ids)

# A case's name: the preset for synthetic:PRESET, file-NAME for a fixture file or directory.
case_name() {
  case "$1" in synthetic:*) echo "${1#synthetic:}" ;; *) echo "file-$(basename "$1")" ;; esac
}

cases() {  # cases STEP EXTRA-ARGS...: every tiny preset, fixture and GDN variant
  local step=$1
  shift
  for m in "${TINY[@]}"; do run_case "$step" "$m" --model "synthetic:$m" --candidate cuda "$@"; done
  for f in "${FIXTURES[@]}"; do run_case "$step" "$(case_name "$f")" --model "$f" --candidate cuda "$@"; done
  for m in "${HYBRIDS[@]}"; do
    for v in "${GDN_VARIANTS[@]}"; do
      local extra=()
      [ "$step" = baseline ] && extra=(--baseline-gdn-variant "$v")
      run_case "$step" "$(case_name "$m")-$v" --model "$m" --candidate cuda --gdn-variant "$v" "${extra[@]}" "$@"
    done
  done
}

do_parity() { cases parity --mode both --prompt-tokens 8 --decode-steps 4; }
do_baseline() {
  cases baseline --baseline simt --policy fixtures/policies/strict.yaml --simt-threads "$(nproc)" \
    --prompt-tokens 8 --decode-steps 4
}
do_real_shapes() {
  local CAPTURE=stats  # a real shape's failing tensors would outgrow runs.tar.gz
  for m in qwen2.5-0.5b qwen3-0.6b llama3.2-1b gpt2-small; do
    run_case real_shapes "$m" --model "synthetic:$m" --layers 2 --candidate cuda --mode both \
      --prompt-tokens 8 --decode-steps 2
  done
  for m in qwen2.5-0.5b qwen3-0.6b llama3.2-1b gpt2-small; do
    run_case real_shapes "$m-vs-simt" --model "synthetic:$m" --layers 2 --candidate cuda --baseline simt \
      --policy fixtures/policies/strict.yaml --simt-threads "$(nproc)" --prompt-tokens 8 --decode-steps 2
  done
  # Block-quantized matrices (kernels/quant_rows.cuh), written here; not in runs/ (tens of MB each).
  local qdir
  qdir=$(mktemp -d)
  if until_deadline "$(bin driftscope-mkfixture)" --out "$qdir" --gguf-type q4_k_m --gguf-only llama-wide \
    qwen3moe-wide >/dev/null; then
    for m in llama-wide qwen3moe-wide; do
      run_case real_shapes "q4_k_m-$m" --model "$qdir/$m.gguf" --candidate cuda --mode both --prompt-tokens 8 \
        --decode-steps 2
      run_case real_shapes "q4_k_m-$m-vs-simt" --model "$qdir/$m.gguf" --candidate cuda --baseline simt \
        --policy fixtures/policies/strict.yaml --simt-threads "$(nproc)" --prompt-tokens 8 --decode-steps 2
    done
  fi
  rm -rf "$qdir"
}
do_gdn_bitexact() { until_deadline "$(bin test_gdn)" --gtest_filter='GdnCuda.*' --gtest_output="json:$RUNS/gdn_bitexact.json"; }
do_cupti() {
  until_deadline "$(bin test_harness)" --gtest_filter='LaunchRecords.CudaCandidate*' \
    --gtest_output="json:$RUNS/cupti_test.json"
  local rc=$?
  run_case cupti profile --model synthetic:qwen2.5-0.5b --layers 2 --candidate cuda --mode both --profile \
    --prompt-tokens 8 --decode-steps 2
  cat "$RUNS/cupti.profile.txt"
  return $rc
}
do_fla_gdn() {
  local py=${GPU_CHECK_FLA_PYTHON:-$ROOT/build/tests/cli/fla-venv/bin/python}
  if ! "$py" -c 'import torch, triton, fla; assert torch.cuda.is_available()' >/dev/null 2>&1; then
    echo "  skipped: $py has no torch with a CUDA device, triton and fla-core (GPU_CHECK_FLA_PYTHON chooses another)"
    return 0
  fi
  run_case fla_gdn qwen35-tiny --model synthetic:qwen35-tiny --candidate "py:$ROOT/examples/fla_gdn.py" \
    --python "$py" --fill reference --mode both --decode-steps 3
}
do_bench() {
  until_deadline "$(bin bench_kernels)" --benchmark_filter='^cuda/' --benchmark_min_time=0.05 \
    --benchmark_out="$OUT/bench_kernels.json" --benchmark_out_format=json
}

echo "gpu-check on $GPU_NAME, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
step facts do_facts
step build do_build
D=$(bin driftscope)
if [ ! -x "$D" ]; then
  echo "gpu-check: $D was not built: the remaining steps cannot run"
  summarize
  exit 1
fi
for p in $("$D" run --help | tr -d '\n' | sed -n 's/.*Presets: \([^ ]*\( [^ -][^ ]*\)*\).*/\1/p' | tr ',' ' '); do
  case "$p" in *-tiny) TINY+=("$p") ;; esac
done
for f in fixtures/models/*; do [ -e "$f/config.json" ] || [ "${f%.gguf}" != "$f" ] && FIXTURES+=("$f"); done
# The hybrids run once per GDN variant; keep them out of the plain list.
TINY=($(printf '%s\n' "${TINY[@]}" | grep -v qwen35))
FIXTURES=($(printf '%s\n' "${FIXTURES[@]}" | grep -v qwen35))
echo "tiny presets: ${TINY[*]}"
echo "fixtures: ${FIXTURES[*]}"
for s in parity baseline real_shapes gdn_bitexact cupti fla_gdn bench; do step "$s" "do_$s"; done
echo "gpu-check: done in $(($(date +%s) - T0)) s; results in $OUT (gpu-results.md is the draft for docs/gpu-results.md)"
