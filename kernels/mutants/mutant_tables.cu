// The mutant KernelTables of this build (dsk_simt under g++, dsk_cuda under nvcc): one row per
// mutant of kernels/mutants/ (<name>.patch or <name>.cu, docs/mutants.md), whose plant() swaps its
// entries into a copy of the production table.
#include "mutants.h"

#include <map>

#include "../common.cuh"

namespace DSK_NS {

namespace mutant_attn_gate_raw {
void plant(dsk::KernelTable&);
}
namespace mutant_chain_add_idx {
void plant(dsk::KernelTable&);
}
namespace mutant_chain_add_rz {
void plant(dsk::KernelTable&);
}
namespace mutant_dim_flip {
void plant(dsk::KernelTable&);
}
namespace mutant_double_bias {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_conv_taps_reversed {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_gates_no_dt_bias {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_head_modulo {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_ids_ignored {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_inplace_race {
void plant(dsk::KernelTable&);
}
namespace mutant_gdn_state_transposed {
void plant(dsk::KernelTable&);
}
namespace mutant_gelu_sigmoid {
void plant(dsk::KernelTable&);
}
namespace mutant_gemv_half_accum {
void plant(dsk::KernelTable&);
}
namespace mutant_gemv_no_tail {
void plant(dsk::KernelTable&);
}
namespace mutant_gemv_warps {
void plant(dsk::KernelTable&);
}
namespace mutant_gqa_modulo {
void plant(dsk::KernelTable&);
}
namespace mutant_half_before_bias {
void plant(dsk::KernelTable&);
}
namespace mutant_layernorm_as_rmsnorm {
void plant(dsk::KernelTable&);
}
namespace mutant_layernorm_no_mean_sub {
void plant(dsk::KernelTable&);
}
namespace mutant_moe_capacity_drop {
void plant(dsk::KernelTable&);
}
namespace mutant_moe_half_combine {
void plant(dsk::KernelTable&);
}
namespace mutant_moe_shexp_gate_no_sigmoid {
void plant(dsk::KernelTable&);
}
namespace mutant_moe_slots_transposed {
void plant(dsk::KernelTable&);
}
namespace mutant_norm_eps_outside {
void plant(dsk::KernelTable&);
}
namespace mutant_norm_no_offset {
void plant(dsk::KernelTable&);
}
namespace mutant_pos_no_offset {
void plant(dsk::KernelTable&);
}
namespace mutant_reduce_no_barrier {
void plant(dsk::KernelTable&);
}
namespace mutant_reduce_war {
void plant(dsk::KernelTable&);
}
namespace mutant_rope_no_scaling {
void plant(dsk::KernelTable&);
}
namespace mutant_rope_theta_default {
void plant(dsk::KernelTable&);
}
namespace mutant_skip_qk_norm {
void plant(dsk::KernelTable&);
}
namespace mutant_softmax_no_max {
void plant(dsk::KernelTable&);
}

namespace {

struct MutantRow {
  const char* name;
  void (*plant)(dsk::KernelTable&);
};

const MutantRow kMutants[] = {
    {"attn-gate-raw", mutant_attn_gate_raw::plant},
    {"chain-add-idx", mutant_chain_add_idx::plant},
    {"chain-add-rz", mutant_chain_add_rz::plant},
    {"dim-flip", mutant_dim_flip::plant},
    {"double-bias", mutant_double_bias::plant},
    {"gdn-conv-taps-reversed", mutant_gdn_conv_taps_reversed::plant},
    {"gdn-gates-no-dt-bias", mutant_gdn_gates_no_dt_bias::plant},
    {"gdn-head-modulo", mutant_gdn_head_modulo::plant},
    {"gdn-ids-ignored", mutant_gdn_ids_ignored::plant},
    {"gdn-inplace-race", mutant_gdn_inplace_race::plant},
    {"gdn-state-transposed", mutant_gdn_state_transposed::plant},
    {"gelu-sigmoid", mutant_gelu_sigmoid::plant},
    {"gemv-half-accum", mutant_gemv_half_accum::plant},
    {"gemv-no-tail", mutant_gemv_no_tail::plant},
    {"gemv-warps", mutant_gemv_warps::plant},
    {"gqa-modulo", mutant_gqa_modulo::plant},
    {"half-before-bias", mutant_half_before_bias::plant},
    {"layernorm-as-rmsnorm", mutant_layernorm_as_rmsnorm::plant},
    {"layernorm-no-mean-sub", mutant_layernorm_no_mean_sub::plant},
    {"moe-capacity-drop", mutant_moe_capacity_drop::plant},
    {"moe-half-combine", mutant_moe_half_combine::plant},
    {"moe-shexp-gate-no-sigmoid", mutant_moe_shexp_gate_no_sigmoid::plant},
    {"moe-slots-transposed", mutant_moe_slots_transposed::plant},
    {"norm-eps-outside", mutant_norm_eps_outside::plant},
    {"norm-no-offset", mutant_norm_no_offset::plant},
    {"pos-no-offset", mutant_pos_no_offset::plant},
    {"reduce-no-barrier", mutant_reduce_no_barrier::plant},
    {"reduce-war", mutant_reduce_war::plant},
    {"rope-no-scaling", mutant_rope_no_scaling::plant},
    {"rope-theta-default", mutant_rope_theta_default::plant},
    {"skip-qk-norm", mutant_skip_qk_norm::plant},
    {"softmax-no-max", mutant_softmax_no_max::plant},
};

}  // namespace

const dsk::KernelTable* mutant_table(const std::string& name) {
  static const std::map<std::string, dsk::KernelTable> tables = [] {
    std::map<std::string, dsk::KernelTable> t;
    for (const MutantRow& m : kMutants) {
      dsk::KernelTable k = table();
      m.plant(k);
      t.emplace(m.name, k);
    }
    return t;
  }();
  const auto it = tables.find(name);
  return it == tables.end() ? nullptr : &it->second;
}

std::vector<std::string> mutant_names() {
  std::vector<std::string> out;
  for (const MutantRow& m : kMutants) out.emplace_back(m.name);
  return out;
}

}  // namespace DSK_NS
