// The progress line of `driftscope run` on a terminal: the bar, and the clock after two seconds.
#include <gtest/gtest.h>

#include "progress.h"

namespace ds {
namespace {

struct Row {
  int done, total;
  double elapsed;
  const char* want;
};

TEST(Progress, LineFromDoneTotalAndElapsed) {
  const Row rows[] = {
      {0, 96, 0.0, "[                              ] 0/96 layers"},
      {12, 96, 1.9, "[###                           ] 12/96 layers"},  // too early for a clock
      {12, 96, 41.0, "[###                           ] 12/96 layers  0:41 elapsed, ~4:47 left"},
      {0, 96, 5.0, "[                              ] 0/96 layers  0:05 elapsed"},  // no rate yet
      {48, 96, 2.0, "[###############               ] 48/96 layers  0:02 elapsed, ~0:02 left"},
      {95, 96, 950.4, "[############################# ] 95/96 layers  15:50 elapsed, ~0:10 left"},
      {96, 96, 3725.0, "[##############################] 96/96 layers  1:02:05 elapsed"},
      {1, 3, 3600.0, "[##########                    ] 1/3 layers  1:00:00 elapsed, ~2:00:00 left"},
      {4, 0, 10.0, "[                              ] 4/0 layers  0:10 elapsed"},  // no layers planned
  };
  for (const Row& r : rows)
    EXPECT_EQ(progress_line(r.done, r.total, r.elapsed), r.want)
        << r.done << "/" << r.total << " at " << r.elapsed << " s";
}

TEST(Progress, ClockRoundsToTheSecond) {
  EXPECT_EQ(clock_text(0.4), "0:00");
  EXPECT_EQ(clock_text(59.5), "1:00");
  EXPECT_EQ(clock_text(-3), "0:00");
  EXPECT_EQ(clock_text(36000), "10:00:00");
}

}  // namespace
}  // namespace ds
