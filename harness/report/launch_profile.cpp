#include "launch_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "stage_catalog.h"

namespace ds {
namespace {

struct Total {
  std::size_t launches = 0;
  double us = 0;
  std::set<std::string> kernels;
  std::size_t first = 0;  // index of its first launch: rows keep the order the run met them
};

std::string layer_label(int layer) { return layer == kModelLayer ? "model" : fmt::format("layer {}", layer); }

}  // namespace

void print_launch_profile(std::FILE* out, const std::vector<StepLaunch>& launches) {
  if (launches.empty()) {
    fmt::print(
        out,
        "\nkernel launches: none recorded (the candidate launched no kernel through the SIMT runtime or "
        "CUDA: a plain C++ candidate, or a plugin built without driftscope_add_simt_kernel)\n");
    return;
  }
  std::set<std::string> backends;
  bool emulated = false;
  double total_us = 0;
  std::map<std::string, Total> per_step;  // "kernel_step -> stages"
  std::map<int, Total> per_layer;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const StepLaunch& l = launches[i];
    backends.insert(l.launch.backend);
    emulated = emulated || l.launch.emulated;
    total_us += l.launch.duration_us;
    for (Total* t :
         {&per_step[fmt::format("{} -> {}", l.kernel_step, fmt::join(l.stages, ","))], &per_layer[l.layer]}) {
      if (t->launches == 0) t->first = i;
      ++t->launches;
      t->us += l.launch.duration_us;
      t->kernels.insert(l.launch.kernel);
    }
  }
  fmt::print(
      out, "\nkernel launches: {} on {}, {:.3f} ms in all{}\n", launches.size(), fmt::join(backends, ", "),
      total_us / 1e3,
      emulated ? " (emulated: CPU wall time of the SIMT runtime, not GPU time)" : " (GPU time from CUPTI)");
  std::vector<std::pair<std::string, Total>> rows(per_step.begin(), per_step.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
  std::size_t w = 24;
  for (const auto& [name, t] : rows) w = std::max(w, name.size());
  fmt::print(out, "{:<{}}  {:>8}  {:>10}  {:>9}  {:>6}  {}\n", "step -> stages", w, "launches", "total ms",
             "mean us", "share", "kernel");
  for (const auto& [name, t] : rows)
    fmt::print(out, "{:<{}}  {:>8}  {:>10.3f}  {:>9.1f}  {:>5.1f}%  {}\n", name, w, t.launches, t.us / 1e3,
               t.us / double(t.launches), total_us > 0 ? 100.0 * t.us / total_us : 0.0,
               fmt::join(t.kernels, ", "));
  fmt::print(out, "per layer: ");
  std::string line;
  for (const auto& [layer, t] : per_layer)
    line += fmt::format("{}{} {:.3f} ms ({})", line.empty() ? "" : ", ", layer_label(layer), t.us / 1e3,
                        t.launches);
  fmt::print(out, "{}\n", line);
}

}  // namespace ds
