#include "graph_capture.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstring>

namespace llama_dump {

namespace {

// ggml names the views, reshapes and copies it makes of a named tensor "NAME (view)",
// "NAME (reshaped)", "NAME (copy of ...)": the same values again, or part of them.
bool derived_name(const std::string& name) { return name.empty() || name.find(" (") != std::string::npos; }

float to_f32(const std::uint8_t* p, ggml_type type) {
  switch (type) {
    case GGML_TYPE_F32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case GGML_TYPE_F16: {
      ggml_fp16_t h;
      std::memcpy(&h, p, sizeof h);
      return ggml_fp16_to_fp32(h);
    }
    default: {  // GGML_TYPE_BF16: the high half of a float32
      std::uint16_t b;
      std::memcpy(&b, p, sizeof b);
      const std::uint32_t bits = std::uint32_t(b) << 16;
      float v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    }
  }
}

}  // namespace

std::vector<std::int64_t> numpy_shape(const std::int64_t ne[4]) {
  int rank = 4;
  while (rank > 1 && ne[rank - 1] == 1) --rank;
  std::vector<std::int64_t> shape;
  for (int i = rank - 1; i >= 0; --i) shape.push_back(ne[i]);
  return shape;
}

bool GraphCapture::callback(ggml_tensor* t, bool ask, void* self) {
  if (ask) return !derived_name(ggml_get_name(t));
  static_cast<GraphCapture*>(self)->keep(t);
  return true;
}

void GraphCapture::keep(const ggml_tensor* t) {
  const std::string name = ggml_get_name(t);
  if (derived_name(name) || ggml_nelements(t) == 0) return;
  if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_BF16) {
    skipped_[name] = ggml_type_name(t->type);
    return;
  }
  if (t->data == nullptr) return;  // not computed in this graph (no buffer of its own)
  // The bytes the tensor spans, from any backend; a view's elements are where nb[] says, not
  // necessarily contiguous.
  std::vector<std::uint8_t> bytes(ggml_nbytes(t));
  ggml_backend_tensor_get(t, bytes.data(), 0, bytes.size());
  Captured c;
  c.shape = numpy_shape(t->ne);
  c.values.reserve(std::size_t(ggml_nelements(t)));
  for (std::int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (std::int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (std::int64_t i1 = 0; i1 < t->ne[1]; ++i1)
        for (std::int64_t i0 = 0; i0 < t->ne[0]; ++i0)
          c.values.push_back(
              to_f32(bytes.data() + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3], t->type));
  tensors_[name] = std::move(c);  // the last tensor of a name wins: Qcur-N after its RoPE
}

std::map<std::string, Captured> GraphCapture::take() {
  std::map<std::string, Captured> out;
  out.swap(tensors_);
  return out;
}

}  // namespace llama_dump
