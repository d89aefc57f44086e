#include "trace_fixture.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "stage_catalog.h"
#include "trace_writer.h"

namespace ds::view::testing {

std::string stage_name(int s) {
  // Catalog names, as a trace's rows must be: a decoder layer's, then GPT-2's own (30 in all).
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (BlockKind kind : {BlockKind::decoder, BlockKind::gpt2})
      for (const StageInfo& st : block_stages(kind))
        if (std::find(out.begin(), out.end(), st.name) == out.end()) out.emplace_back(st.name);
    return out;
  }();
  return names.at(std::size_t(s));
}

std::string write_fixture(const std::string& name, const FixtureSpec& spec) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  nlohmann::json run = {
      {"model", {{"name", "fixture"}}},
      {"candidate", {{"name", spec.candidate}}},
      {"modes", spec.chained ? nlohmann::json{"isolated", "chained"} : nlohmann::json{"isolated"}},
      {"policy", "dtype-defaults"}};
  if (!spec.baseline.empty()) run["baseline"] = {{"name", spec.baseline}};
  if (!spec.probe.empty()) run["probe"] = spec.probe;
  trace::TraceWriter w(path, {{"schema_note", "viewer test"}}, run);
  const Shape shape{4, 8};
  for (int seq = 0; seq < spec.seqs; ++seq)
    for (int step = 0; step < spec.steps; ++step)
      for (int layer = 0; layer < spec.layers; ++layer)
        for (Mode mode : {Mode::isolated, Mode::chained})
          for (int s = 0; s < spec.stages && (spec.chained || mode == Mode::isolated); ++s) {
            StageResult r;
            r.key = {step, layer, stage_name(s), seq};
            r.mode = mode;
            r.shape = shape;
            r.m.numel = 32;
            r.m.atol = 1e-3;
            r.m.rtol = 1e-3;
            r.m.ref_rms = 1;
            const bool fails =
                (spec.fail_seq < 0 || seq == spec.fail_seq) &&
                ((layer == spec.fail_layer && s == spec.fail_stage) ||
                 (mode == Mode::chained &&
                  (layer > spec.fail_layer || (layer == spec.fail_layer && s > spec.fail_stage))));
            const bool nan = mode == Mode::chained && layer == spec.nan_layer && s == 0;
            r.m.max_abs =
                fails ? 0.05 * (layer + 1)
                      : 1e-5 * (s + 1) * (mode == Mode::chained ? std::pow(spec.chained_growth, layer) : 1);
            r.m.mean_abs = r.m.max_abs / 4;
            r.m.max_ulp = fails ? 300 : 1;
            r.m.cosine = fails ? 0.99 : 1 - 1e-9;
            r.status = nan ? Status::nan : fails ? Status::fail : Status::pass;
            if (nan) r.m.nan_cand = 1;
            if (spec.floors) r.floor_max_abs = 5e-6 * (layer + 1), r.floor_mean_abs = r.floor_max_abs / 4;
            r.m.mismatches = fails ? 3 : 0;
            r.m.first_mismatch = fails ? 9 : -1;
            std::vector<double> ref(32), cand(32);
            for (int i = 0; i < 32; ++i)
              ref[std::size_t(i)] = std::sin(i + layer), cand[std::size_t(i)] = ref[std::size_t(i)];
            if (fails) cand[9] += r.m.max_abs;
            if (nan) cand[5] = std::nan("");
            r.per_token_rel = {1e-4, 2e-4, fails ? 0.05 : 1e-4, 1e-4};
            const Tensor tr = Tensor::from_f64(shape, ref), tc = Tensor::from_f64(shape, cand);
            w.append(r, &tr, &tc);
          }
  nlohmann::json result = {{"verdict", spec.verdict},
                           {"first_failure",
                            {{"stage", stage_name(spec.fail_stage)},
                             {"layer", spec.fail_layer},
                             {"step", 0},
                             {"mode", "isolated"}}}};
  if (spec.drift_start) result["drift_start_layer"] = spec.fail_layer;
  w.finish(result);
  return path;
}

}  // namespace ds::view::testing
