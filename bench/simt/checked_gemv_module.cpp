// bench_simt's access-hooked GEMV: the textbook GEMV of tests/simt/kernels/gemv.cu in its CHECKED
// flavour, in a module of its own (with its own copy of the SIMT runtime) because one module
// cannot hold both flavours of the same kernels. bench_simt loads it with dlopen and times it
// against the plain flavour linked into itself. Device memory is allocated here, by the runtime
// copy whose hazard checker watches it.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "simt/simt.h"
#include "test_kernels.h"

namespace {

struct Gemv {
  simt::DeviceBuffer<float> W, x, y;
  int rows, cols;
};
std::unique_ptr<Gemv> g_gemv;

}  // namespace

// `memcheck` non-zero: the buffers are memcheck's guarded blocks (Config::memcheck when allocated).
extern "C" [[gnu::visibility("default")]] void bench_checked_gemv_setup(const float* W, const float* x,
                                                                        int rows, int cols, int memcheck) {
  simt::Config cfg;
  cfg.memcheck = memcheck != 0;
  simt::set_config(cfg);
  g_gemv.reset();
  const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  g_gemv =
      std::make_unique<Gemv>(Gemv{simt::DeviceBuffer<float>(std::vector<float>(W, W + n)),
                                  simt::DeviceBuffer<float>(std::vector<float>(x, x + cols)),
                                  simt::DeviceBuffer<float>(static_cast<std::size_t>(rows)), rows, cols});
}

// One GEMV on one host thread, checked by `check` (0 nothing, 1 the hazard checker, 2 memcheck,
// 3 none but interleaved at every access: Config::interleave, the schedule rerun's first
// schedule, whose blocks take turns on the interleaver's host threads); returns the number of
// race reports and memcheck findings it made (none for this kernel) or -1 before setup.
extern "C" [[gnu::visibility("default")]] int bench_checked_gemv_run(int check, float* y_out) {
  if (!g_gemv) return -1;
  static int reports = 0;
  driftscope_simt_set_race_sink([](const simt_race_info*, void*) { ++reports; }, nullptr);
  simt::Config cfg;
  cfg.host_threads = 1;
  cfg.racecheck = check == 1;
  cfg.memcheck = check == 2;
  cfg.interleave = check == 3;
  cfg.seed = 1;
  simt::set_config(cfg);
  reports = 0;
  simt_test::gemv(g_gemv->W.data(), g_gemv->x.data(), g_gemv->y.data(), g_gemv->rows, g_gemv->cols);
  reports += static_cast<int>(simt::take_memory_findings().size());
  if (y_out != nullptr) {
    const std::vector<float> y = g_gemv->y.to_host();
    std::copy(y.begin(), y.end(), y_out);
  }
  return reports;
}
