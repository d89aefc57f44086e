#include "python_candidate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "plugin/sha256.h"
#include "python_process.h"
#include "wire.h"

namespace ds {

namespace {

std::vector<std::string> read_strings(wire::Reader& r) {
  const std::uint64_t n = r.u64();
  if (n > r.buf.size())
    throw wire::Malformed(fmt::format("a list of {} strings in {} bytes", n, r.buf.size()));
  std::vector<std::string> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(r.str());
  return v;
}

// What a probe answered, read; a process that ran the candidate's code may have sent anything.
template <class Read>
auto read_answer(const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const wire::Malformed& e) {
    throw CandidateCrash(what, fmt::format("sent a malformed answer: {}", e.what()));
  }
}

std::string request_of(const std::string& config, const std::vector<BlockKind>& kinds) {
  std::string msg;
  wire::put_str(msg, config);
  wire::put_u64(msg, kinds.size());
  for (BlockKind k : kinds) wire::put_u64(msg, std::uint64_t(k));
  return msg;
}

}  // namespace

std::optional<PythonSpec> parse_python_spec(std::string_view spec) {
  if (!spec.starts_with("py:")) return std::nullopt;
  spec.remove_prefix(3);
  const std::size_t py = spec.find(".py:");
  if (py == std::string_view::npos) return PythonSpec{std::string(spec), ""};
  return PythonSpec{std::string(spec.substr(0, py + 3)), std::string(spec.substr(py + 4))};
}

std::string config_json(const ModelConfig& c) {
  std::vector<std::string> gdn_fused;
  for (Op op : c.gdn_fused.list()) gdn_fused.emplace_back(op_name(op));
  nlohmann::json j = {
      {"name", c.name},
      {"arch", std::string(c.arch_name())},
      {"family", std::string(family_name(c.family))},
      {"n_layers", c.n_layers},
      {"hidden", c.hidden},
      {"n_heads", c.n_heads},
      {"n_kv_heads", c.n_kv_heads},
      {"head_dim", c.head_dim},
      {"ffn", c.ffn},
      {"vocab", c.vocab},
      {"max_positions", c.max_positions},
      {"sliding_window", c.sliding_window},
      {"rope_theta", c.rope_theta},
      {"norm_eps", c.norm_eps},
      {"partial_rotary", c.partial_rotary},
      {"rotary_dim", c.rotary_dim()},
      {"rope_mode", std::string(rope_mode_name(c.rope_mode))},
      {"qk_rows_permuted", c.qk_rows_permuted},
      {"rope_freq_factors", c.rope_freq_factors},
      {"qkv_bias", c.qkv_bias},
      {"o_bias", c.o_bias},
      {"mlp_bias", c.mlp_bias},
      {"qk_norm", c.qk_norm},
      {"tied_embeddings", c.tied_embeddings},
      {"norm_plus_one", c.norm_plus_one},
      {"attn_scale_divide", c.attn_scale_divide},
      {"full_attention_interval", c.full_attention_interval},
      {"gdn_k_heads", c.gdn_k_heads},
      {"gdn_v_heads", c.gdn_v_heads},
      {"gdn_k_dim", c.gdn_k_dim},
      {"gdn_v_dim", c.gdn_v_dim},
      {"conv_kernel", c.conv_kernel},
      {"gdn_head_map", std::string(gdn_head_map_name(c.gdn_head_map))},
      {"gdn_state_layout", c.gdn_state_layout == GdnStateLayout::key_major ? "key_major" : "value_major"},
      {"conv_state_len", c.conv_state_len == ConvStateLen::k ? "k" : "k_minus_1"},
      {"gdn_fused", gdn_fused},
      {"n_experts", c.n_experts},
      {"n_experts_used", c.n_experts_used},
      {"expert_ffn", c.expert_ffn},
      {"moe_routing", std::string(moe_routing_name(c.moe_routing))},
      {"moe_norm_topk", c.moe_norm_topk},
      {"shared_expert_ffn", c.shared_expert_ffn}};
  auto& kinds = j["layer_kinds"] = nlohmann::json::array();
  for (BlockKind k : c.layer_kinds) kinds.push_back(std::string(block_kind_name(k)));
  return j.dump();
}

std::vector<std::string> PythonCandidate::names(const std::string& path) {
  const std::string reply = python::probe("meta", path, "", "", "open candidate");
  return read_answer("open candidate", [&] {
    wire::Reader r{reply};
    for (int i = 0; i < 2; ++i) r.str();
    r.u64();
    read_strings(r);
    r.str();
    for (int i = 0; i < 4; ++i) r.u64();
    r.str();
    r.str();
    return read_strings(r);
  });
}

PythonCandidate::PythonCandidate(const std::string& path, const std::string& name)
    : path_(path), name_(name) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (!std::filesystem::is_regular_file(abs, ec)) throw PluginError(fmt::format("py:{}: no such file", path));
  path_ = abs.string();
  const std::string reply = python::probe("meta", path_, name, "", "open candidate");
  std::uint64_t dtype = 0;
  read_answer("open candidate", [&] {
    wire::Reader r{reply};
    name_ = r.str();
    description_ = r.str();
    dtype = r.u64();
    for (const std::string& op : read_strings(r)) {
      const auto parsed = parse_op(op);
      if (!parsed) {
        std::vector<std::string_view> known;
        for (unsigned i = 0; i < unsigned(Op::kCount); ++i) known.push_back(op_name(Op(i)));
        throw PluginError(fmt::format("py:{}:{} declares an op '{}' no driftscope knows (they are: {})", path,
                                      name_, op, fmt::join(known, ", ")));
      }
      caps_.add(*parsed);
    }
    unavailable_ = r.str();
    batched_kinds_ = r.u64();
    order_varies_kinds_ = r.u64();
    const std::uint64_t top_k = r.u64(), experts = r.u64();
    if (top_k > std::uint64_t(std::numeric_limits<int>::max()) ||
        experts > std::uint64_t(std::numeric_limits<int>::max()))
      throw wire::Malformed(fmt::format("MoE limits {} / {} out of range", top_k, experts));
    moe_limits_ = {int(top_k), int(experts)};
    info_.plugin_version = r.str();
    info_.sdk_version = r.str();
    info_.names = read_strings(r);
  });
  if (dtype > std::uint64_t(DType::i32))
    throw PluginError(
        fmt::format("py:{}: candidate '{}' declares an unknown storage dtype {}", path, name_, dtype));
  storage_ = DType(dtype);
  info_.path = path_;
  info_.sha256 = sha256_file(path_);
}

PythonCandidate::~PythonCandidate() = default;

std::vector<KernelStep> PythonCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  const std::string key = config_json(cfg);
  if (key != plans_key_ || !plans_.count(kind)) {
    // Every kind the model uses in one probe: a Python start-up each is seconds with torch.
    std::vector<BlockKind> kinds = {BlockKind::embed, BlockKind::head, kind};
    for (BlockKind k : cfg.layer_kinds)
      if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
    kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
    const std::string reply = python::probe("plan", path_, name_, request_of(key, kinds), "plan");
    plans_ = read_answer("plan", [&] {
      wire::Reader r{reply};
      std::map<BlockKind, std::vector<KernelStep>> read;
      for (std::uint64_t n = r.u64(); n--;) {
        const std::uint64_t k = r.u64();
        if (k > std::uint64_t(BlockKind::head)) throw wire::Malformed(fmt::format("a block kind {}", k));
        auto& steps = read[BlockKind(k)];
        for (std::uint64_t m = r.u64(); m--;) {
          KernelStep s;
          s.name = r.str();
          s.inputs = read_strings(r);
          s.outputs = read_strings(r);
          steps.push_back(std::move(s));
        }
      }
      if (!read.count(kind))
        throw wire::Malformed(fmt::format("no plan for the {} blocks asked for", block_kind_name(kind)));
      return read;
    });
    plans_key_ = key;
  }
  return plans_.at(kind);
}

std::string PythonCandidate::answer(const std::string& what) {
  for (;;) {
    std::string msg;
    bool timed_out = false;
    // No deadline of its own: the harness's --timeout bounds the candidate's whole process.
    if (!proc_->recv(msg, {}, &timed_out)) throw CandidateCrash(what, proc_->why_silent(timed_out, 0));
    if (msg.rfind("wt", 0) != 0) return msg;
    wire::Reader r{msg};
    r.at = 2;
    std::string reply;
    const Tensor* t = nullptr;
    try {
      t = weights_->find(r.str());
    } catch (const wire::Malformed& e) {
      throw CandidateCrash(what, fmt::format("asked for a weight in a malformed message: {}", e.what()));
    }
    if (t) {
      reply = "t";
      wire::put_tensor(reply, *t);
    } else {
      reply = "n";
    }
    if (!proc_->send(reply)) throw CandidateCrash(what, proc_->why_silent(false, 0));
  }
}

void PythonCandidate::load(const ModelConfig& cfg, const WeightStore& weights) {
  cfg_ = cfg;
  weights_ = &weights;
  proc_ = std::make_unique<python::PythonProcess>("serve", path_, name_);
  std::string msg;
  wire::put_str(msg, config_json(cfg));
  if (!proc_->send(msg)) throw CandidateCrash("load", proc_->why_silent(false, 0));
  const std::string reply = answer("load");
  if (reply == "ok") return;
  wire::Reader r{reply};
  r.at = 2;
  std::string why = "an unreadable answer";
  try {
    why = r.str();
  } catch (const wire::Malformed&) {
  }
  throw CandidateCrash("load", reply.rfind("ex", 0) == 0 || reply.rfind("bd", 0) == 0
                                   ? why
                                   : std::string("answered its load with a malformed message"));
}

void PythonCandidate::run(const KernelStep& step, const StepContext& ctx, const TensorMap& inputs,
                          TensorMap& outputs) {
  if (!proc_) throw CandidateCrash(step.name, "the Python candidate was never loaded");
  if (!proc_->send(wire::step_request(step, ctx, inputs)))
    throw CandidateCrash(step.name, proc_->why_silent(false, 0));
  const std::string reply = answer(step.name);
  wire::StepReply got;
  try {
    got = wire::read_step_reply(reply, step.outputs, wire::max_step_output_elems(cfg_, ctx));
  } catch (const wire::Malformed& e) {
    throw CandidateCrash(step.name, fmt::format("sent a malformed reply: {}", e.what()));
  }
  if (got.threw) throw CandidateCrash(step.name, got.error);
  for (auto& [name, t] : got.outputs) outputs[name] = std::move(t);
}

}  // namespace ds
