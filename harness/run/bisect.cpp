#include "bisect.h"

#include <map>
#include <tuple>

namespace ds {

std::optional<StageResult> find_culprit(const std::vector<StageResult>& results) {
  bool has_isolated = false;
  for (const auto& r : results) has_isolated |= r.mode == Mode::isolated;
  for (const auto& r : results)
    if (is_failure(r) && (!has_isolated || r.mode == Mode::isolated || r.status == Status::crashed)) return r;
  for (const auto& r : results)
    if (is_failure(r)) return r;
  return std::nullopt;
}

int mark_inherited(std::vector<StageResult>& results) {
  std::map<std::tuple<int, int, std::string>, const StageResult*> local;
  for (const auto& r : results)
    if (r.mode == Mode::isolated) local[{r.key.step, r.key.layer, r.key.stage}] = &r;
  int marked = 0;
  for (auto& r : results) {
    if (r.note.find("inherited") != std::string::npos) continue;
    auto it = local.find({r.key.step, r.key.layer, r.key.stage});
    if (it != local.end() && is_inherited_failure(r, *it->second)) {
      if (!r.note.empty()) r.note += "; ";
      r.note += "inherited: local error within policy";
      ++marked;
    }
  }
  return marked;
}

std::optional<int> drift_start_layer(const std::vector<double>& error, const std::vector<double>& floor,
                                     double k) {
  const std::size_t n = std::min(error.size(), floor.size());
  for (std::size_t l = 0; l < n; ++l) {
    bool stays_out = true;
    for (std::size_t j = l; j < n && stays_out; ++j) stays_out = error[j] > k * floor[j];
    if (stays_out && (l + 1 == n || error[n - 1] >= error[l])) return int(l);
  }
  return std::nullopt;
}

}  // namespace ds
