#include "qk_permute.h"

#include <cstring>

namespace ds::ref {

namespace {
// to_hf: row `gguf` of the source lands at row `hf` of the result, or the reverse.
void permute_rows(WeightStore& w, std::string_view name, int heads, bool to_hf) {
  const Tensor* t = w.find(name);
  if (!t) return;
  const std::int64_t rows = t->dim(0), d = rows / heads;
  const std::size_t row_bytes = t->nbytes() / std::size_t(rows);
  Tensor out(t->dtype(), t->shape());
  for (std::int64_t gguf = 0; gguf < rows; ++gguf) {
    const std::int64_t hf = gguf_qk_to_hf(gguf, d);
    const std::int64_t src = to_hf ? gguf : hf, dst = to_hf ? hf : gguf;
    std::memcpy(out.raw() + std::size_t(dst) * row_bytes, t->raw() + std::size_t(src) * row_bytes, row_bytes);
  }
  w.put(std::string(name), std::move(out));
}
}  // namespace

void unpermute_qk(WeightStore& w, std::string_view name, int heads) { permute_rows(w, name, heads, true); }
void permute_qk(WeightStore& w, std::string_view name, int heads) { permute_rows(w, name, heads, false); }

}  // namespace ds::ref
