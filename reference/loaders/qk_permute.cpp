#include "qk_permute.h"

#include <cstring>
#include <memory>
#include <vector>

namespace ds::ref {

namespace {
// to_hf: row `gguf` of the source lands at row `hf` of the result, or the reverse.
// Rows are whole runs of bytes in every encoding, quantized ones included: moved, not decoded.
void permute_row_bytes(const std::byte* from, std::byte* to, std::int64_t rows, std::size_t row_bytes,
                       int heads, bool to_hf) {
  const std::int64_t d = rows / heads;
  for (std::int64_t gguf = 0; gguf < rows; ++gguf) {
    const std::int64_t hf = gguf_qk_to_hf(gguf, d);
    const std::int64_t src = to_hf ? gguf : hf, dst = to_hf ? hf : gguf;
    std::memcpy(to + std::size_t(dst) * row_bytes, from + std::size_t(src) * row_bytes, row_bytes);
  }
}

void permute_rows(WeightStore& w, std::string_view name, int heads, bool to_hf) {
  if (const QuantMatrix* q = w.find_quantized(name)) {
    auto bytes = std::make_shared<std::vector<std::byte>>(q->nbytes());
    permute_row_bytes(q->row_data(0), bytes->data(), q->rows(), q->row_bytes, heads, to_hf);
    QuantMatrix out = *q;
    out.data = bytes->data();
    out.owner = std::move(bytes);
    w.put_quantized(std::string(name), std::move(out));
    return;
  }
  const Tensor* t = w.find(name);
  if (!t) return;
  const std::int64_t rows = t->dim(0);
  Tensor out(t->dtype(), t->shape());
  permute_row_bytes(t->raw(), out.raw(), rows, t->nbytes() / std::size_t(rows), heads, to_hf);
  w.put(std::string(name), std::move(out));
}
}  // namespace

void unpermute_qk(WeightStore& w, std::string_view name, int heads) { permute_rows(w, name, heads, true); }
void permute_qk(WeightStore& w, std::string_view name, int heads) { permute_rows(w, name, heads, false); }

}  // namespace ds::ref
