// libFuzzer target: the trace readers behind `report`, `diff` and the viewer. The input is written
// to a file and opened as `report` opens it: every case listed, each case read (rows, result,
// INCOMPLETE), then what a re-judge or a diff reads on demand (tensor pools, per-token errors,
// captured steps) and a diff of the case against itself. Every input must end in data or a
// TraceError.
#include <hdf5.h>
#include <sys/time.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz_files.h"
#include "trace_diff.h"
#include "trace_reader.h"

namespace {

void read_case(const std::string& path, const ds::trace::TraceCase& c) {
  const ds::trace::TraceReader trace(path, c.group);
  (void)trace.incomplete();
  (void)trace.attr("capture_stages");
  for (const ds::trace::TraceRow& row : trace.rows()) {
    if (trace.has_tensors(row)) {
      (void)trace.ref_tensor(row);
      (void)trace.cand_tensor(row);
    }
    (void)trace.per_token(row);
    const ds::StageKey& k = row.result.key;
    (void)trace.captured_step(k.step, k.layer, row.result.mode, k.stage);
  }
  (void)ds::trace::diff_traces(trace, trace);
}

// The readers' ReadGuard bounds metadata reads with alarm(2), which shares the one real-time
// timer with libFuzzer's hang detection and disarms it when the guard ends: put libFuzzer's back.
class KeepTimer {
 public:
  KeepTimer() { ::getitimer(ITIMER_REAL, &saved_); }
  ~KeepTimer() { ::setitimer(ITIMER_REAL, &saved_, nullptr); }
  KeepTimer(const KeepTimer&) = delete;
  KeepTimer& operator=(const KeepTimer&) = delete;

 private:
  itimerval saved_{};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const KeepTimer keep_timer;
  const std::string path = ds::fuzz::write_scratch("input.h5", ds::fuzz::as_text(data, size));
  try {
    for (const ds::trace::TraceCase& c : ds::trace::list_cases(path)) {
      try {
        read_case(path, c);
      } catch (const ds::trace::TraceError&) {
      }
    }
  } catch (const ds::trace::TraceError&) {
  }
  // Every handle a reader opened is closed on every path, the error paths included: a reader that
  // leaks them keeps the file open and grows without bound in a long-lived viewer.
  if (const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); open != 0) {
    std::fprintf(stderr, "fuzz_trace: %zd HDF5 objects left open after the input\n", open);
    std::abort();
  }
  return 0;
}
