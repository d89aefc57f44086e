// The progress line `driftscope run` redraws on a terminal's stderr, one tick per reference layer.
#pragma once

#include <string>

namespace ds {

// "[####      ] 12/96 layers" and, once the run has taken `eta_after_s` seconds or more,
// "  0:41 elapsed, ~4:32 left" (remaining time extrapolated from the mean time per layer so
// far; prefill layers are slower than decode layers, so it errs long early on). A finished run
// shows its elapsed time only. Times are m:ss, or h:mm:ss from an hour on.
std::string progress_line(int done, int total, double elapsed_s, double eta_after_s = 2.0);

// Seconds as m:ss or h:mm:ss, rounded to the nearest second.
std::string clock_text(double seconds);

}  // namespace ds
