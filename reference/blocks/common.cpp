#include <fmt/format.h>

#include <stdexcept>

#include "block.h"
#include "ops.h"

namespace ds::ref {

Tensor BlockContext::stage(const Tensor& t) const { return round_stage(t, storage); }

void BlockContext::check_position(const LayerState& st, int pos0) const {
  if (st.positions != pos0)
    throw std::logic_error(
        fmt::format("reference layer {}: step at position {} but the layer has seen {} tokens", layer, pos0,
                    st.positions));
}

void swiglu_mlp(const BlockContext& c, TensorMap& s) {
  const auto& cfg = c.cfg;
  s["ffn_norm"] =
      c.stage(rmsnorm(s["residual_1"], c.lw("ffn_norm.weight"), cfg.norm_eps, cfg.norm_plus_one, cfg.hidden));
  s["gate"] = c.stage(linear(s["ffn_norm"], c.lw("ffn_gate.weight"), c.lb("ffn_gate.bias")));
  s["up"] = c.stage(linear(s["ffn_norm"], c.lw("ffn_up.weight"), c.lb("ffn_up.bias")));
  s["ffn_act"] = c.stage(silu_mul(s["gate"], s["up"]));
  s["down"] = c.stage(linear(s["ffn_act"], c.lw("ffn_down.weight"), c.lb("ffn_down.bias")));
  s["residual_2"] = c.stage(add(s["residual_1"], s["down"]));
}

void append_kv(LayerState& st, const Tensor& k, const Tensor& v) {
  st.k = Tensor::concat_rows(st.k, k);
  st.v = Tensor::concat_rows(st.v, v);
}

}  // namespace ds::ref
