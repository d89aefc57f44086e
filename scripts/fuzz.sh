#!/usr/bin/env bash
# scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAG...]
#   Builds the libFuzzer targets (clang, ASan + UBSan: the `fuzz` preset, in build-fuzz/) and fuzzes
#   TARGET (gguf | hf | trace | policy | reply) for SECONDS, starting from its seed corpus (fixtures/, see
#   tests/fuzz/make_seeds.sh) and the corpus earlier runs grew (build-fuzz/corpus/TARGET). A crash,
#   hang or sanitizer report is saved under build-fuzz/artifacts/TARGET/ and ends the run with a
#   non-zero exit; copy it to tests/fuzz/regressions/TARGET/ once fixed (docs/fuzzing.md).
#   JOBS (default 2) is the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: $0 gguf|hf|trace|policy|reply SECONDS [LIBFUZZER_FLAG...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
target="$1"
seconds="$2"
shift 2
case "$target" in gguf | hf | trace | policy | reply) ;; *) usage ;; esac
[[ "$seconds" =~ ^[0-9]+$ ]] || usage

[ -f build-fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j "${JOBS:-2}" --target "fuzz_$target"
tests/fuzz/make_seeds.sh build-fuzz/seeds >/dev/null

corpus="build-fuzz/corpus/$target"
artifacts="build-fuzz/artifacts/$target"
mkdir -p "$corpus" "$artifacts"
# HDF5 is not built with ASan: its own memcpy past a buffer, or the blocks it leaks, on a corrupt
# file are HDF5's bugs, not ours (tests/fuzz/*.supp say which); reports from our code are kept.
export ASAN_OPTIONS="${ASAN_OPTIONS:-suppressions=$PWD/tests/fuzz/asan.supp:detect_leaks=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "fuzzing $target for ${seconds}s: build-fuzz/tests/fuzz/fuzz_$target $corpus build-fuzz/seeds/$target"
dict=()
[ -f "tests/fuzz/$target.dict" ] && dict=(-dict="tests/fuzz/$target.dict")
log="build-fuzz/fuzz-$target.log"
: >"$log"
# The trace readers' ReadGuard ends the process (exit 2, "... corrupt trace") when the HDF5 library
# itself crashes or loops on a corrupt file, which is their documented answer to such a file, not a
# finding; it also ends libFuzzer, whose input is then saved as guard-* from the path the error
# names and the run goes on for the time left. Anything else that stops libFuzzer ends the script.
deadline=$((SECONDS + seconds))
guarded=0
rc=0
while [ $((deadline - SECONDS)) -gt 0 ]; do
  rc=0
  "build-fuzz/tests/fuzz/fuzz_$target" "$corpus" "build-fuzz/seeds/$target" "${dict[@]}" \
    -max_total_time=$((deadline - SECONDS)) -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" 2>&1 | tee -a "$log" || rc=$?
  input="$(tail -n 5 "$log" | sed -n 's/^error: \(.*\): .*: corrupt trace$/\1/p' | tail -n 1)"
  if [ "$rc" -eq 2 ] && [ -n "$input" ] && [ -f "$input" ]; then
    guarded=$((guarded + 1))
    cp "$input" "$artifacts/guard-$(sha1sum "$input" | cut -c1-40)"
    rm -rf "$(dirname "$input")"  # the target's scratch directory, which _exit left behind
    rc=0
    continue
  fi
  break
done
# Executions over every restart: the last status line of each libFuzzer process.
execs="$(awk '/^#[0-9]+\t/ {n = substr($1, 2)} /^INFO: Seed: / {sum += n; n = 0} END {print sum + n}' "$log")"
echo "$target: ${seconds}s, $execs executions, exit $rc, corpus $corpus: $(find "$corpus" -type f | wc -l) inputs," \
  "artifacts in $artifacts: $(find "$artifacts" -type f | wc -l), ReadGuard exits (HDF5 faults contained): $guarded"
exit "$rc"
