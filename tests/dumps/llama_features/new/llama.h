// The shape of llama.h from mid 2025 on, reduced to what the feature check reads.
#pragma once
enum llama_flash_attn_type { LLAMA_FLASH_ATTN_TYPE_AUTO = -1, LLAMA_FLASH_ATTN_TYPE_DISABLED = 0 };
struct llama_context_params {
  enum llama_flash_attn_type flash_attn_type;
};
extern "C" struct llama_context_params llama_context_default_params(void);
