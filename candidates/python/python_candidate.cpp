#include "python_candidate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "plugin/sha256.h"
#include "python_process.h"
#include "wire.h"

namespace ds {

namespace {

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

namespace {

// The "meta" probe's answer: who the candidate is, its traits, and the file's candidate names.
struct Meta {
  std::string name, description;
  std::uint64_t dtype = 0;
  ProbedTraits traits;
  std::string plugin_version, sdk_version;
  std::vector<std::string> names;
};

Meta read_meta(const std::string& reply, const std::function<void(const std::string& op)>& unknown_op) {
  return read_answer("open candidate", [&] {
    wire::Reader r{reply};
    Meta m;
    m.name = r.str();
    m.description = r.str();
    m.dtype = r.u64();
    m.traits = read_traits(r, unknown_op);
    m.plugin_version = r.str();
    m.sdk_version = r.str();
    m.names = read_strings(r);
    return m;
  });
}

}  // namespace

std::vector<std::string> PythonCandidate::names(const std::string& path) {
  // Only the names: an op the first candidate declares wrongly is its own run's error.
  return read_meta(python::probe("meta", path, "", "", "open candidate"), [](const std::string&) {}).names;
}

PythonCandidate::PythonCandidate(const std::string& path, const std::string& name) : path_(path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (!std::filesystem::is_regular_file(abs, ec)) throw PluginError(fmt::format("py:{}: no such file", path));
  path_ = abs.string();
  const std::string reply = python::probe("meta", path_, name, "", "open candidate");
  Meta meta = read_meta(reply, [&](const std::string& op) {
    std::vector<std::string_view> known;
    for (unsigned i = 0; i < unsigned(Op::kCount); ++i) known.push_back(op_name(Op(i)));
    // The name as the file has it: the meta answer's first field, read before the traits.
    wire::Reader r{reply};
    throw PluginError(fmt::format("py:{}:{} declares an op '{}' no driftscope knows (they are: {})", path,
                                  r.str(), op, fmt::join(known, ", ")));
  });
  name_ = std::move(meta.name);
  description_ = std::move(meta.description);
  set_traits(std::move(meta.traits));
  info_.plugin_version = std::move(meta.plugin_version);
  info_.sdk_version = std::move(meta.sdk_version);
  info_.names = std::move(meta.names);
  if (meta.dtype > std::uint64_t(DType::i32))
    throw PluginError(
        fmt::format("py:{}: candidate '{}' declares an unknown storage dtype {}", path, name_, meta.dtype));
  storage_ = DType(meta.dtype);
  info_.path = path_;
  info_.sha256 = sha256_file(path_);
}

PythonCandidate::~PythonCandidate() = default;

std::vector<KernelStep> PythonCandidate::plan(const ModelConfig& cfg, BlockKind kind) const {
  // Every kind the model uses in one probe: a Python start-up each is seconds with torch.
  return cached_plan(cfg, kind, [&](const std::vector<BlockKind>& kinds) {
    return python::probe("plan", path_, name_, request_of(config_json(cfg), kinds), "plan");
  });
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
