// What llama.cpp's graph computes in one llama_decode call, as its eval callback
// (llama_context_params.cb_eval) sees it: every named tensor, the last of each name, gathered to
// float32 in NumPy's axis order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct ggml_tensor;

namespace llama_dump {

struct Captured {
  std::vector<std::int64_t> shape;  // ggml's ne reversed, its trailing 1-dims dropped
  std::vector<float> values;        // C order
};

class GraphCapture {
 public:
  // The ggml_backend_sched_eval_callback: `ask` asks whether we want the tensor's data; then,
  // with ask false, the tensor is computed and ours to read. Always lets the graph go on.
  static bool callback(ggml_tensor* t, bool ask, void* self);

  // The tensors of the call that just ended, by name; emptied for the next call.
  std::map<std::string, Captured> take();
  // Names seen whose type cannot be converted to float32 (quantized, integer), for the log.
  const std::map<std::string, std::string>& skipped() const { return skipped_; }

 private:
  void keep(const ggml_tensor* t);

  std::map<std::string, Captured> tensors_;
  std::map<std::string, std::string> skipped_;
};

// ggml's ne reversed without the trailing 1-dims (at least one axis): [T, W], [T, heads,
// head_dim], and [W] for one token.
std::vector<std::int64_t> numpy_shape(const std::int64_t ne[4]);

}  // namespace llama_dump
