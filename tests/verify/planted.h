// The planted RMSNorm kernels of planted.cu, as the plugin (planted_candidate.cpp) calls them.
#pragma once

enum class PlantedKernel {
  correct,
  uninit_shared,
  uninit_static_shared,
  stale_global,
  lost_update,
  split_past_2048,
  static_shared_race,
  half_compute,
  uninit_local
};

// A device buffer of per-row sums a candidate keeps across its calls.
struct PlantedScratch {
  explicit PlantedScratch(int max_rows);
  ~PlantedScratch();
  PlantedScratch(const PlantedScratch&) = delete;
  PlantedScratch& operator=(const PlantedScratch&) = delete;
  float* sums = nullptr;
};

// out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, host pointers, by kernel `k`.
void planted_rmsnorm(PlantedKernel k, float* out, const float* x, const float* w, int rows, int cols,
                     float eps, PlantedScratch& scratch);
