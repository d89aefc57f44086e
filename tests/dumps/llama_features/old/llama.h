// The shape of llama.h before mid 2025, reduced to what the feature check reads.
#pragma once
struct llama_context_params {
  bool flash_attn;
};
extern "C" struct llama_context_params llama_context_default_params(void);
