#!/usr/bin/env bash
# The two README commands:
#   scripts/dev.sh demo   install what is missing, build, run the bundled fixture (trace + table)
#   scripts/dev.sh test   install what is missing, build, run the whole test suite (ctest), then the
#                         sanitizer suite (ASan + UBSan build of the loaders, readers, parsers, SIMT)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build ccache pkg-config git python3-venv
  libhdf5-dev hdf5-tools libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  nlohmann-json3-dev libyaml-cpp-dev libboost-context-dev libsqlite3-dev
  libimgui-dev libglfw3-dev libstb-dev xvfb xauth python3-h5py python3-numpy)
# What only the test suite needs: a real single-node Slurm for the job-array test (cli.slurm_array).
TEST_PACKAGES=(slurm-wlm)

# install_missing [PACKAGE...]: PACKAGES and these, those not installed yet.
install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

configure() {
  # The CUDA toolkit is optional: without nvcc the cuda candidate is simply not built.
  [ -d build ] || cmake --preset default
}
# build [TARGET...]: the whole tree, or only the named targets (the demo needs the CLI and one module).
build() {
  configure
  if [ $# -gt 0 ]; then
    cmake --build build -j "$(nproc)" --target "$@"
  else
    cmake --build build -j "$(nproc)"
  fi
}

# The loaders, compare engine, trace reader/writer, policy parser, SIMT runtime and the fuzz
# targets' replays (seeds and regression inputs) again under ASan + UBSan (the asan preset, in
# build-asan/, through ccache like the main build): only the test programs those tests need are
# built (no CLI, runner, candidate or kernel mutant), and ctest runs the tests labelled `sanitize`
# (tests/CMakeLists.txt), without the Python tests of the trace folder (traces.*), which drive the
# whole CLI and are run by the main build.
sanitize_build() {
  [ -f build-asan/build.ninja ] || cmake --preset asan >/dev/null
  cmake --build build-asan -j "$(nproc)" --target sanitize_tests
}
# Nor the synthetic generator's statistics at the real-shape presets (qwen2.5-0.5b to llama3.2-1b,
# gpt2-small): the same code runs sanitized at every tiny and -wide preset, and those four took 57 s
# of the suite's 84 under ASan; the main build runs all of them.
sanitize_tests() {
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -L sanitize \
    -E '^traces[.]|SyntheticStats[.]LookLikeARealCheckpoint/[a-z0-9_]*(_[0-9_]+b|_small)( |$)'
}

# The test command on a fresh machine is mostly waiting for two cores; what it can overlap, it does
# (docs/build.md has the measurements). The FLA test's venv (torch, triton, fla-core from PyPI: a
# download, the network's time) is made while the tree compiles. The ASan tree compiles beside the
# main suite at the lowest priority, on the CPU time the tests leave idle (timeouts they wait out,
# children they wait for). Each runs in a session of its own, killed whole if this script stops
# first, at the lowest priority: under the kernel's autogroup scheduling (on by default) a new
# session is a scheduling group of its own, which competes with ours as an equal whatever its
# processes' nice values, so the group is given nice 19 too.
BACKGROUND=()
in_background() {  # in_background LOG COMMAND...: its process group's id in BACKGROUND
  local log=$1
  shift
  setsid sh -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' sh "$@" >"$log" 2>&1 &
  BACKGROUND+=("$!")
}
trap 'for g in "${BACKGROUND[@]}"; do kill -- "-$g" 2>/dev/null || true; done' EXIT

run_tests() {
  configure
  in_background build/fla-venv.log /usr/bin/python3 tests/cli/test_fla_gdn.py --make-venv build/tests/cli/fla-venv
  build
  wait "${BACKGROUND[0]}" ||
    echo "(the FLA test's venv was not made: $(tail -1 build/fla-venv.log); cli.fla_gdn will say why)"
  in_background build/asan-build.log "$0" sanitize-build
  ctest --test-dir build --output-on-failure -j "$(nproc)"
  if ! wait "${BACKGROUND[1]}"; then
    tail -40 build/asan-build.log
    echo "the ASan build failed (its whole log: build/asan-build.log)"
    exit 1
  fi
  BACKGROUND=()
  sanitize_tests
}

# The command's wall time, printed last (docs/build.md lists what each command should take).
report_time() {
  echo "scripts/dev.sh $1: $((SECONDS / 60)) min $((SECONDS % 60)) s"
}

case "${1:-}" in
  demo)
    install_missing
    # The CLI and the one mutant module the second run loads (ds_mutant_chain_add_idx_module): the
    # other mutants and kernel flavours are modules the demo never opens.
    build driftscope ds_mutant_chain_add_idx_module
    mkdir -p out
    fixture=fixtures/models/qwen2-tiny.gguf   # a real GGUF v3 file (driftscope-mkfixture)
    echo "== the fused CUDA kernels, run on the CPU (simt), against the reference: expect PASS (exit 0)"
    ./build/harness/driftscope run --model "$fixture" --candidate simt --mode both --prompt-tokens 4 \
      --decode-steps 2 --trace out/demo-simt.h5
    echo
    echo "== the same kernels with a chain-add bug (the residual indexed by blockIdx.x): expect FAIL at residual_1 of layer 0 (exit 1)"
    rc=0
    ./build/harness/driftscope run --model "$fixture" --candidate mutant:chain-add-idx --mode both \
      --prompt-tokens 4 --trace out/demo-mutant.h5 --only-failures || rc=$?
    [ "$rc" -eq 1 ] || { echo "expected exit 1 from the mutant run, got $rc"; exit 1; }
    echo
    echo "traces written: out/demo-simt.h5 out/demo-mutant.h5"
    echo "browse one: cmake --build build --target driftscope-view && build/viewer/driftscope-view out/demo-mutant.h5"
    report_time demo
    ;;
  test)
    install_missing "${TEST_PACKAGES[@]}"
    run_tests
    report_time test
    ;;
  # What run_tests starts in the background (not one of the two README commands).
  sanitize-build)
    sanitize_build
    ;;
  *)
    echo "usage: $0 demo|test" >&2
    exit 2
    ;;
esac
