#include "run_json.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "build_info.h"
#include "contracts.h"
#include "load_model.h"
#include "simt_options.h"

namespace ds {

nlohmann::json trace_root_json(const RunOptions& opt) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {{"tool_version", tool_version()},
          {"git_revision", git_revision()},
          {"host", host},
          {"device", "cpu"},
          {"command_line", opt.command_line}};
}

nlohmann::json candidate_json(const RunOptions& opt, const Candidate& cand,
                              const std::optional<PluginInfo>& origin, const std::string& checked_twin) {
  nlohmann::json j = {{"name", cand.name()},
                      {"spec", opt.candidate},
                      {"description", cand.description()},
                      {"storage_dtype", dtype_name(cand.storage_dtype())},
                      {"capabilities", cand.capabilities().str()},
                      {"fill", opt.fill ? "reference" : "none"}};
  if (origin)
    j["plugin"] = {{"path", origin->path},
                   {"sha256", origin->sha256},
                   {"version", origin->plugin_version},
                   {"sdk_version", origin->sdk_version}};
  if (origin && !checked_twin.empty()) j["plugin"]["checked_twin"] = checked_twin;
  return j;
}

nlohmann::json run_json(const RunOptions& opt, const Policy& policy, const ModelConfig* cfg,
                        const nlohmann::json& candidate, const nlohmann::json& baseline) {
  std::vector<std::string> modes;
  for (Mode m : opt.modes) modes.emplace_back(mode_name(m));
  nlohmann::json run = {
      {"policy", policy.name()},         {"modes", modes},       {"seed", opt.seed},
      {"model_spec", opt.model},         {"layers", opt.layers}, {"prompt_tokens", opt.prompt_tokens},
      {"decode_steps", opt.decode_steps}};
  if (opt.from_step > 0) run["from_step"] = opt.from_step;
  if (!opt.probe.empty()) run["probe"] = opt.probe;
  if (!opt.numerics.empty()) run["numerics"] = opt.numerics;
  // A file or directory model also by its absolute path, so replay works from anywhere.
  if (std::error_code ec; !ref::synthetic_preset(opt.model) && std::filesystem::exists(opt.model, ec))
    run["model_path"] = std::filesystem::absolute(opt.model, ec).lexically_normal().string();
  if (cfg)
    run["model"] = {{"name", cfg->name},
                    {"family", family_name(cfg->family)},
                    {"n_layers", cfg->n_layers},
                    {"hidden", cfg->hidden},
                    {"n_heads", cfg->n_heads},
                    {"n_kv_heads", cfg->n_kv_heads},
                    {"head_dim", cfg->head_dim},
                    {"ffn", cfg->ffn},
                    {"vocab", cfg->vocab},
                    {"rope_theta", cfg->rope_theta},
                    {"rope_mode", rope_mode_name(cfg->rope_mode)},
                    {"norm_eps", cfg->norm_eps},
                    {"required_ops", ref::required_ops(*cfg).str()}};
  // What `driftscope export` needs to lay a hybrid's Gated DeltaNet stages out as an engine does.
  if (cfg && cfg->gdn_v_heads > 0)
    run["model"]["gdn"] = {
        {"k_heads", cfg->gdn_k_heads},
        {"v_heads", cfg->gdn_v_heads},
        {"k_dim", cfg->gdn_k_dim},
        {"v_dim", cfg->gdn_v_dim},
        {"conv_kernel", cfg->conv_kernel},
        {"conv_state_rows", cfg->conv_state_rows()},
        {"state_layout", cfg->gdn_state_layout == GdnStateLayout::key_major ? "key_major" : "value_major"}};
  run["candidate"] = candidate.is_null() ? nlohmann::json{{"name", opt.candidate}} : candidate;
  if (!opt.case_info.is_null()) run["case"] = opt.case_info;
  if (!opt.baseline.empty())
    run["baseline"] = baseline.is_null() ? nlohmann::json{{"name", opt.baseline}} : baseline;
  run["simt"] = {{"order", simt_order_text(opt.simt)}, {"threads", simt_threads(opt.simt)},
                 {"strict", opt.simt.strict},          {"race_check", opt.simt.race_check},
                 {"racecheck", opt.simt.racecheck},    {"memcheck", opt.simt.memcheck}};
  return run;
}

}  // namespace ds
