// The Gated DeltaNet layer's steps up to its gated norm, the same for every backend of ours
// (cpu-f16 and the kernels); what follows, the output projection and the residual, fused or
// not, is each backend's own.
#pragma once

#include <vector>

#include "candidate.h"

namespace ds {

inline std::vector<KernelStep> gdn_steps_to_gated_norm() {
  return {{"attn_norm", {"x"}, {"attn_norm"}},
          {"gdn_in_proj", {"attn_norm"}, {"qkv_mixed", "z_gate", "beta", "g"}},
          {"conv", {"qkv_mixed", "prev:conv_state"}, {"conv", "conv_state"}},
          {"l2norm", {"conv"}, {"q_l2", "k_l2"}},
          {"gdn", {"q_l2", "k_l2", "conv", "g", "beta", "prev:gdn_state"}, {"gdn_out", "gdn_state"}},
          {"gated_norm", {"gdn_out", "z_gate"}, {"gated_norm"}}};
}

}  // namespace ds
