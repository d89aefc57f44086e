// llama_dump: run a GGUF through llama.cpp and write every named graph tensor of each
// llama_decode call in the layout `driftscope run --candidate dump:DIR` reads (docs/dumps.md):
// DIR/stepN/<name>.npy (step0 the prompt, step1.. one greedy token each), DIR/tokens.npy (the
// prompt), DIR/greedy.txt (the token llama.cpp chose after each step).
#include <fmt/format.h>
#include <llama.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph_capture.h"
#include "npy_writer.h"

namespace {

namespace fs = std::filesystem;

struct Args {
  std::string model, out;
  std::vector<llama_token> prompt;
  int steps = 3;
  ggml_type kv_type = GGML_TYPE_F32;
  std::string flash_attn = "off";  // on, off, auto
  int gpu_layers = 0;
  int threads = 0;  // 0: llama.cpp's default
};

constexpr const char* kUsage =
    "usage: llama_dump --model FILE.gguf --prompt 1,5,9 --out DIR [--steps N] [--kv-type f32|f16]\n"
    "                  [--flash-attn on|off|auto] [--gpu-layers N] [--threads N]\n"
    "Writes DIR/stepS/<tensor>.npy for every named graph tensor of each llama_decode call (step0 the\n"
    "prompt, then N greedy tokens), DIR/tokens.npy and DIR/greedy.txt, for\n"
    "`driftscope run --model FILE.gguf --candidate dump:DIR --decode-steps N`. For an f32 comparison\n"
    "keep the defaults --kv-type f32 --flash-attn off (llama.cpp's own defaults are f16 and auto).\n";

[[noreturn]] void usage_error(const std::string& why) {
  fmt::print(stderr, "llama_dump: {}\n{}", why, kUsage);
  std::exit(2);
}

int parse_int(const std::string& flag, const std::string& text, int min) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || v < min)
    usage_error(fmt::format("{} {}: expected an integer of at least {}", flag, text, min));
  return v;
}

std::vector<llama_token> parse_tokens(const std::string& text) {
  std::vector<llama_token> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(parse_int("--prompt", text.substr(at, comma - at), 0));
    at = comma + 1;
  }
  return out;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fmt::print("{}", kUsage);
      std::exit(0);
    }
    if (i + 1 >= argc) usage_error(fmt::format("{}: needs a value", flag));
    const std::string v = argv[++i];
    if (flag == "--model") {
      a.model = v;
    } else if (flag == "--out") {
      a.out = v;
    } else if (flag == "--prompt") {
      a.prompt = parse_tokens(v);
    } else if (flag == "--steps") {
      a.steps = parse_int(flag, v, 0);
    } else if (flag == "--kv-type") {
      if (v != "f32" && v != "f16") usage_error(fmt::format("--kv-type {}: f32 or f16", v));
      a.kv_type = v == "f32" ? GGML_TYPE_F32 : GGML_TYPE_F16;
    } else if (flag == "--flash-attn") {
      if (v != "on" && v != "off" && v != "auto")
        usage_error(fmt::format("--flash-attn {}: on, off or auto", v));
      a.flash_attn = v;
#ifndef LLAMA_DUMP_FLASH_ATTN_TYPE
      if (v == "auto") usage_error("--flash-attn auto: this llama.cpp has no automatic choice (on or off)");
#endif
    } else if (flag == "--gpu-layers") {
      a.gpu_layers = parse_int(flag, v, 0);
    } else if (flag == "--threads") {
      a.threads = parse_int(flag, v, 1);
    } else {
      usage_error(fmt::format("unknown argument {}", flag));
    }
  }
  if (a.model.empty()) usage_error("--model: required");
  if (a.out.empty()) usage_error("--out: required");
  if (a.prompt.empty()) usage_error("--prompt: required (token ids, e.g. 1,5,9,42,7)");
  return a;
}

void set_flash_attn(llama_context_params& p, const std::string& mode) {
#ifdef LLAMA_DUMP_FLASH_ATTN_TYPE
  p.flash_attn_type = mode == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                      : mode == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                      : LLAMA_FLASH_ATTN_TYPE_AUTO;
#else
  p.flash_attn = mode == "on";  // before flash_attn_type (mid 2025): a bool, no automatic choice
#endif
}

llama_token greedy(llama_context* ctx, int n_vocab) {
  const float* logits = llama_get_logits_ith(ctx, -1);
  if (logits == nullptr) throw std::runtime_error("llama_get_logits_ith: no logits for the last token");
  return llama_token(std::max_element(logits, logits + n_vocab) - logits);
}

// One llama_decode call of `tokens` at positions from `pos0`, every row's logits requested (the
// last layer's tensors then hold every row, not only the last).
void decode(llama_context* ctx, const std::vector<llama_token>& tokens, int pos0) {
  llama_batch batch = llama_batch_init(int32_t(tokens.size()), 0, 1);
  batch.n_tokens = int32_t(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = llama_pos(pos0 + int(i));
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  const int32_t rc = llama_decode(ctx, batch);
  llama_batch_free(batch);
  if (rc != 0) throw std::runtime_error(fmt::format("llama_decode at position {}: returned {}", pos0, rc));
}

void write_step(const fs::path& dir, const std::map<std::string, llama_dump::Captured>& tensors) {
  fs::create_directories(dir);
  for (const auto& [name, c] : tensors) {
    std::string file = name;
    std::replace(file.begin(), file.end(), '/', '_');
    llama_dump::write_npy_f32((dir / (file + ".npy")).string(), c.shape, c.values);
  }
}

int run(const Args& a) {
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = a.gpu_layers;
  llama_model* model = llama_model_load_from_file(a.model.c_str(), mp);
  if (model == nullptr) {
    fmt::print(stderr, "llama_dump: {}: llama.cpp cannot load the model (its log above says why)\n", a.model);
    return 1;
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (llama_token t : a.prompt)
    if (t >= n_vocab) {
      fmt::print(stderr, "llama_dump: --prompt: token {} is outside the vocabulary of {} tokens\n", t,
                 n_vocab);
      llama_model_free(model);
      return 2;
    }

  llama_dump::GraphCapture capture;
  llama_context_params cp = llama_context_default_params();
  // The prompt in one ubatch: one graph, so each name is computed once per llama_decode call.
  const auto n_ctx = uint32_t(a.prompt.size() + std::size_t(a.steps) + 1);
  cp.n_ctx = n_ctx;
  cp.n_batch = n_ctx;
  cp.n_ubatch = n_ctx;
  cp.type_k = a.kv_type;
  cp.type_v = a.kv_type;
  set_flash_attn(cp, a.flash_attn);
  cp.cb_eval = &llama_dump::GraphCapture::callback;
  cp.cb_eval_user_data = &capture;
  if (a.threads > 0) cp.n_threads = cp.n_threads_batch = a.threads;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) {
    fmt::print(stderr, "llama_dump: llama.cpp cannot create a context for {}\n", a.model);
    llama_model_free(model);
    return 1;
  }

  int rc = 0;
  try {
    fs::create_directories(a.out);
    llama_dump::write_npy_i32((fs::path(a.out) / "tokens.npy").string(), a.prompt);
    std::vector<llama_token> chosen;
    std::vector<llama_token> feed = a.prompt;
    int pos = 0;
    for (int step = 0; step <= a.steps; ++step) {
      decode(ctx, feed, pos);
      const auto tensors = capture.take();
      write_step(fs::path(a.out) / fmt::format("step{}", step), tensors);
      pos += int(feed.size());
      chosen.push_back(greedy(ctx, n_vocab));
      feed = {chosen.back()};
      fmt::print("step{}: {} tensors, greedy token {}\n", step, tensors.size(), chosen.back());
    }
    std::ofstream greedy_txt(fs::path(a.out) / "greedy.txt");
    for (std::size_t i = 0; i < chosen.size(); ++i) greedy_txt << (i ? "," : "") << chosen[i];
    greedy_txt << "\n";
    if (!greedy_txt) throw std::runtime_error(fmt::format("{}/greedy.txt: cannot write the file", a.out));
    for (const auto& [name, type] : capture.skipped())
      fmt::print("not written: {} ({}: not a float tensor)\n", name, type);
  } catch (const std::exception& e) {
    fmt::print(stderr, "llama_dump: {}\n", e.what());
    rc = 1;
  }
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return rc;
}

}  // namespace

int main(int argc, char** argv) { return run(parse_args(argc, argv)); }
