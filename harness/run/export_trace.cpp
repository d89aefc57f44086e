#include "export_trace.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "dump/dump_layout.h"
#include "dump/dump_mapping.h"
#include "dump/export_shape.h"
#include "dump/tensor_files.h"
#include "output_file.h"
#include "runner.h"
#include "stage_catalog.h"
#include "trace_cases.h"
#include "trace_reader.h"
#include "user_file.h"

namespace ds {

namespace fs = std::filesystem;

namespace {

// What export needs of the model: the widths of its stages, from the trace's run JSON.
ModelConfig config_of(const nlohmann::json& run, const std::string& trace) {
  if (!run.contains("model") || !run["model"].is_object())
    throw InputError(fmt::format(
        "{}: the run records no model configuration (a stopped run has nothing to export)", trace));
  const auto& m = run["model"];
  ModelConfig c;
  try {
    c.name = m.at("name").get<std::string>();
    c.n_layers = m.at("n_layers").get<int>();
    c.hidden = m.at("hidden").get<int>();
    c.n_heads = m.at("n_heads").get<int>();
    c.n_kv_heads = m.at("n_kv_heads").get<int>();
    c.head_dim = m.at("head_dim").get<int>();
    c.ffn = m.at("ffn").get<int>();
    c.vocab = m.at("vocab").get<int>();
    for (Family f : {Family::llama, Family::qwen2, Family::qwen3, Family::gpt2, Family::qwen35,
                     Family::qwen3moe, Family::qwen3next})
      if (m.value("family", std::string()) == family_name(f)) c.family = f;
    // A hybrid's GDN dimensions; a trace written before they were recorded has none, and a
    // mapping that needs them says so (export_shape.h).
    if (m.contains("gdn")) {
      const auto& g = m.at("gdn");
      c.gdn_k_heads = g.at("k_heads").get<int>();
      c.gdn_v_heads = g.at("v_heads").get<int>();
      c.gdn_k_dim = g.at("k_dim").get<int>();
      c.gdn_v_dim = g.at("v_dim").get<int>();
      c.conv_kernel = g.at("conv_kernel").get<int>();
      c.conv_state_len =
          g.at("conv_state_rows").get<int>() == c.conv_kernel ? ConvStateLen::k : ConvStateLen::k_minus_1;
      c.gdn_state_layout = g.at("state_layout").get<std::string>() == "value_major"
                               ? GdnStateLayout::value_major
                               : GdnStateLayout::key_major;
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: the run's model configuration is incomplete: {}", trace, e.what()));
  }
  return c;
}

// The catalog naming: one file per step (safetensors) or per stage (npy).
dump::Source catalog_source(const std::string& stage, const std::string& format) {
  dump::Source s;
  const bool model = is_model_level_stage(stage);
  if (format == "npy") {
    s.file = model ? fmt::format("step{{step}}/{}.npy", stage)
                   : fmt::format("step{{step}}/layer{{layer}}.{}.npy", stage);
  } else {
    s.file = "step{step}.safetensors";
    s.tensor = model ? stage : fmt::format("layer{{layer}}.{}", stage);
  }
  return s;
}

struct Pending {
  Tensor value;       // [rows, width] (a fused tensor: [rows, q + 2 kv]), a state stage's 2-D shape
  std::string stage;  // the (first) stage written there, for its `shape`
  dump::Source src;
  std::set<std::string> parts;  // split parts placed so far
  bool split = false;
};

std::string ext_of(const std::string& file) { return fs::path(file).extension().string(); }

}  // namespace

ExportSummary export_trace(const ExportOptions& opt) {
  if (opt.format.empty() && opt.mapping.empty())
    throw InputError("--format: safetensors or npy (or --mapping FILE, whose files say)");
  if (!opt.format.empty() && opt.format != "safetensors" && opt.format != "npy")
    throw InputError(fmt::format("--format {}: safetensors or npy", opt.format));
  std::regex stage_re;
  try {
    stage_re = compile_stage_pattern(opt.stages.empty() ? ".*" : opt.stages);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("--stages: {}", e.what()));
  }
  if (opt.dtype == DType::i32) throw InputError("--dtype: f64, f32, f16 or bf16");

  std::optional<dump::Mapping> mapping;
  try {
    if (!opt.mapping.empty()) mapping = dump::load_mapping(opt.mapping, opt.out);
  } catch (const dump::DumpError& e) {
    throw InputError(e.what());
  }
  if (mapping) {
    for (const auto& [stage, src] : mapping->stages) {
      const std::string e = ext_of(src.file);
      if (e == ".npz")
        throw InputError(fmt::format("{}: stages.{}: export writes .npy and .safetensors files, not .npz",
                                     opt.mapping, stage));
      if (!opt.format.empty() && e != "." + opt.format)
        throw InputError(fmt::format("{}: stages.{} names a {} file, but --format is {}", opt.mapping, stage,
                                     e, opt.format));
    }
    if (opt.dtype == DType::bf16)
      for (const auto& [stage, src] : mapping->stages)
        if (ext_of(src.file) == ".npy")
          throw InputError("--dtype bf16: NumPy has no bf16 (use safetensors or f32)");
  } else if (opt.format == "npy" && opt.dtype == DType::bf16) {
    throw InputError("--dtype bf16: NumPy has no bf16 (use --format safetensors or f32)");
  }

  std::unique_ptr<trace::TraceReader> reader;
  try {
    if (opt.case_index >= 0) {
      const auto cases = trace::list_cases(opt.trace);
      if (std::size_t(opt.case_index) >= cases.size())
        throw InputError(
            fmt::format("--case {}: {} holds {} case(s)", opt.case_index, opt.trace, cases.size()));
      reader = std::make_unique<trace::TraceReader>(opt.trace, cases[std::size_t(opt.case_index)].group);
    } else {
      reader = std::make_unique<trace::TraceReader>(opt.trace);
    }
  } catch (const trace::TraceError& e) {
    throw InputError(e.what());
  }
  // Such a run stored the baseline's tensors where the oracle's go: golden data it is not.
  if (const auto& run = reader->run(); run.is_object() && run.contains("baseline")) {
    const auto& b = run["baseline"];
    const bool named = b.is_object() && b.contains("name") && b["name"].is_string();
    throw InputError(fmt::format(
        "{}: the run was judged against --baseline {}, so its stored stage tensors are that candidate's, not "
        "the oracle's; export a run made without --baseline",
        opt.trace, named ? b["name"].get<std::string>() : std::string("?")));
  }
  const ModelConfig cfg = config_of(reader->run(), opt.trace);
  const int prompt_len = reader->run().value("prompt_tokens", 0);
  std::vector<int> prompt;
  if (const auto& res = reader->result(); res && res->contains("tokens"))
    for (const auto& t : (*res)["tokens"])
      if (int(prompt.size()) < prompt_len) prompt.push_back(t.get<int>());

  std::error_code ec;
  fs::create_directories(opt.out, ec);
  if (ec || !fs::is_directory(opt.out))
    throw InputError(fmt::format("--out {}: cannot create the directory", opt.out));

  // The reference side of each (step, layer, stage), once (a `both` run stores it per mode).
  std::set<std::tuple<int, int, std::string>> seen;
  std::set<std::string> exported, in_trace;
  std::map<std::pair<int, std::string>, Tensor> history;           // rows: positions
  std::map<std::pair<std::string, std::string>, Pending> pending;  // (file, tensor) -> value
  std::size_t tensors = 0;
  try {
    for (const trace::TraceRow& row : reader->rows()) {
      const StageKey& k = row.result.key;
      in_trace.insert(k.stage);
      if (row.ref_offset < 0 || !std::regex_match(k.stage, stage_re)) continue;
      if (!seen.insert({k.step, k.layer, k.stage}).second) continue;
      dump::Source src;
      if (mapping) {
        auto it = mapping->stages.find(k.stage);
        if (it == mapping->stages.end()) continue;
        src = it->second;
      } else {
        src = catalog_source(k.stage, opt.format);
      }
      const std::string path = (fs::path(opt.out) / dump::expand(src.file, k.step, k.layer)).string();
      const std::string tensor = dump::expand(src.tensor, k.step, k.layer);
      const std::string where = fmt::format("{} tensor '{}' (stage {})", path, tensor, k.stage);
      dump::Source layout = src;
      layout.transpose.clear();
      Tensor rows = dump::from_catalog(reader->ref_tensor(row), layout, cfg, k.stage, where);
      if (!mapping) rows = rows.reshaped(row.result.shape);
      if (src.rows == dump::Rows::positions) {
        auto& h = history[{k.layer, k.stage}];
        h = Tensor::concat_rows(h, rows);
        rows = h;
      }
      Pending& p = pending[{path, tensor}];
      if (p.stage.empty()) p.stage = k.stage;
      p.src = src;
      if (src.split.empty()) {
        p.value = rows;
      } else {
        std::int64_t width = 0;
        const std::int64_t at = dump::split_part_offset(cfg, k.stage, &width);
        const std::int64_t full = cfg.q_dim() + 2 * cfg.kv_dim(), n = rows.dim(0);
        if (p.value.empty()) p.value = Tensor(DType::f64, {n, full});
        for (std::int64_t r = 0; r < n; ++r)
          for (std::int64_t c = 0; c < width; ++c) p.value.set(r * full + at + c, rows.at(r * width + c));
        p.split = true;
        p.parts.insert(k.stage);
      }
      exported.insert(k.stage);
      ++tensors;
    }
  } catch (const dump::DumpError& e) {
    throw InputError(e.what());
  } catch (const trace::TraceError& e) {
    throw InputError(e.what());
  }
  if (tensors == 0)
    throw InputError(fmt::format(
        "{}: no reference tensor to export{} (a run stores them with --capture all; --stages and --mapping "
        "select among them)",
        opt.trace, opt.stages.empty() ? "" : fmt::format(" matching --stages {}", opt.stages)));

  // Group by file: a .npy file holds one tensor, a .safetensors file many.
  std::map<std::string, std::vector<std::pair<std::string, Tensor>>> files;
  for (auto& [key, p] : pending) {
    if (p.split && p.parts.size() != 3)
      throw InputError(fmt::format("{}: tensor '{}' fuses q, k and v, but the trace holds only {} of them",
                                   key.first, key.second, p.parts.size()));
    Tensor t = p.value;
    if (mapping) {
      try {
        t = dump::to_engine_shape(p.value, p.src, mapping->shapes, cfg, p.stage,
                                  fmt::format("{}: stages.{}", opt.mapping, p.stage));
      } catch (const dump::DumpError& e) {
        throw InputError(e.what());
      }
    }
    files[key.first].emplace_back(key.second, t.to(opt.dtype));
  }
  try {
    for (auto& [path, list] : files) {
      fs::create_directories(fs::path(path).parent_path(), ec);
      if (ext_of(path) == ".npy")
        dump::write_npy(path, list.front().second);
      else
        dump::write_safetensors(path, list);
    }
  } catch (const dump::DumpError& e) {
    throw InputError(e.what());
  }

  // The directory is a dump of its own: its mapping, storage dtype and prompt.
  YAML::Node m;
  if (mapping) {
    try {
      m = YAML::Load(read_user_text<InputError>(opt.mapping, kMaxConfigFileBytes, "mapping file"));
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("{}: {}", opt.mapping, e.what()));
    }
  } else {
    m["engine"] = "driftscope export (the reference's stages under catalog names)";
    for (const std::string& s : exported) {
      const dump::Source src = catalog_source(s, opt.format);
      m["stages"][s] = src.tensor.empty() ? src.file : fmt::format("{}:{}", src.file, src.tensor);
    }
    for (const std::string& s : in_trace)
      if (!exported.count(s)) m["absent"].push_back(s);
  }
  m["storage"] = std::string(dtype_name(opt.dtype));
  const bool npy = opt.format == "npy" || (opt.format.empty() && mapping && !mapping->stages.empty() &&
                                           ext_of(mapping->stages.begin()->second.file) == ".npy");
  if (!prompt.empty()) {
    std::string tok_file = npy ? "tokens.npy" : "tokens.safetensors", tok_tensor = npy ? "" : "tokens";
    if (mapping && mapping->tokens) {
      tok_file = mapping->tokens->file;
      tok_tensor = mapping->tokens->tensor;
    } else {
      m["tokens"] = tok_tensor.empty() ? tok_file : fmt::format("{}:{}", tok_file, tok_tensor);
    }
    Tensor t(DType::i32, {std::int64_t(prompt.size())});
    for (std::size_t i = 0; i < prompt.size(); ++i) t.data<std::int32_t>()[i] = prompt[i];
    const std::string path = (fs::path(opt.out) / tok_file).string();
    try {
      if (ext_of(path) == ".npy")
        dump::write_npy(path, t);
      else
        dump::write_safetensors(path, {{tok_tensor, t}});
    } catch (const dump::DumpError& e) {
      throw InputError(e.what());
    }
  }
  const std::string mapping_out = (fs::path(opt.out) / "mapping.yaml").string();
  YAML::Emitter em;
  em << m;
  const std::string text =
      fmt::format("# Written by driftscope export from {}: read it back with --candidate dump:{}\n{}\n",
                  opt.trace, opt.out, em.c_str());
  if (auto why = write_whole_file(mapping_out, text))
    throw InputError(fmt::format("{}: cannot write the file: {}", mapping_out, *why));
  return {tensors, files.size(), mapping_out};
}

}  // namespace ds
