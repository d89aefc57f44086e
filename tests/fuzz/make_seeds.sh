#!/usr/bin/env bash
# make_seeds.sh OUT: the seed corpus of every fuzz target, from fixtures/ (docs/fuzzing.md):
#   OUT/gguf    fixtures/models/*.gguf
#   OUT/hf      each fixtures/models/<name>/ packed as one input: config.json, the separator of
#               fuzz_hf.cpp, model.safetensors
#   OUT/policy  fixtures/policies/*.yaml
#   OUT/trace   tests/fuzz/seeds/trace/*.h5.gz, unpacked: traces `driftscope run` and `merge` wrote
#               (finished, killed, failing with captured steps, merged, stopped by a bad input)
#   OUT/reply   tests/fuzz/seeds/reply/*.bin: replies a candidate process sends for one step
#               (outputs with launch records, an error, no outputs, an empty tensor)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$1"
rm -rf "$out"
mkdir -p "$out"/{gguf,hf,policy,trace,reply}
cp "$root"/fixtures/models/*.gguf "$out/gguf/"
for dir in "$root"/fixtures/models/*/; do
  name="$(basename "$dir")"
  { cat "$dir/config.json"; printf '\n--driftscope-fuzz-safetensors--\n'; cat "$dir/model.safetensors"; } \
    > "$out/hf/$name"
done
cp "$root"/fixtures/policies/*.yaml "$out/policy/"
for gz in "$here"/seeds/trace/*.h5.gz; do
  gzip -dc "$gz" > "$out/trace/$(basename "$gz" .gz)"
done
cp "$here"/seeds/reply/*.bin "$out/reply/"
echo "seeds in $out: $(find "$out" -type f | wc -l) files"
