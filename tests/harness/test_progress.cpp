// The progress line of `driftscope run` on a terminal: the bar, and the clock after two seconds.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "progress.h"
#include "progress_meter.h"

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

// What the meter says as a run's events arrive: the phase before the first layer, then the step
// and layer under way out of the part's plan.
TEST(ProgressMeter, NamesThePhaseThenTheStepAndLayer) {
  std::FILE* sink = std::tmpfile();
  ProgressMeter m(ProgressMeter::Style::lines, sink, 3600);
  m.begin("[2/9] probe large-logits", 24, 3);
  EXPECT_EQ(m.line(), "[2/9] probe large-logits: starting, 0:00 elapsed");
  auto on = m.observer();
  on("gate");
  on("load_weights");
  EXPECT_EQ(m.line(), "[2/9] probe large-logits: loading weights, 0:00 elapsed");
  for (int i = 0; i < 25; ++i) on("reference_layer");
  EXPECT_EQ(m.line().substr(0, 25), "[2/9] probe large-logits:");
  EXPECT_NE(m.line().find("25/72 layers"), std::string::npos) << m.line();
  EXPECT_NE(m.line().find("(step 2/3, layer 2/24)"), std::string::npos) << m.line();
  m.begin("[3/9] odd widths", 0, 1);  // a model whose layers are unknown: a clock only
  EXPECT_EQ(m.line(), "[3/9] odd widths: starting, 0:00 elapsed");
  // A batch file's sequences each run the layers: past the plan, a count without bar or estimate
  // (it read "24/8 layers").
  m.begin("[4/9] batches, GDN state slots", 2, 2);
  for (int i = 0; i < 5; ++i) on("reference_layer");
  EXPECT_EQ(m.line(), "[4/9] batches, GDN state slots: 5 layers done, 0:00 elapsed");
  std::fclose(sink);
}

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) text += char(c);
  return text;
}

// In a log (--progress without a terminal): a line when a part begins, then one every `every_s`
// while nothing else happens, so a long layer never leaves the log silent.
TEST(ProgressMeter, LogGetsALineEveryPeriodWithoutEvents) {
  std::FILE* sink = std::tmpfile();
  {
    ProgressMeter m(ProgressMeter::Style::lines, sink, 0.2);
    m.begin("run", 2, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  const std::string text = read_all(sink);
  std::fclose(sink);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  // The begin line, then about seven ticks; at least two of them even on a loaded machine, where
  // without the clock there would be the begin line alone.
  EXPECT_GE(lines, 3) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "a log gets no carriage returns";
}

TEST(ProgressMeter, QuietWithoutATerminalUnlessAsked) {
  if (isatty(STDERR_FILENO)) GTEST_SKIP() << "stderr is a terminal here; the default is to draw";
  EXPECT_EQ(ProgressMeter::style_for(false), ProgressMeter::Style::off);
  EXPECT_EQ(ProgressMeter::style_for(true), ProgressMeter::Style::lines);
}

}  // namespace
}  // namespace ds
