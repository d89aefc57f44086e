// Where a long command is: check's and verify's parts and run's layers, told at least every few
// seconds while they compute, so a real-shape battery of half an hour never sits silent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace ds {

class ProgressMeter {
 public:
  // redraw: one line rewritten in place (a terminal); lines: a new line every `every_s` (a log).
  enum class Style { off, redraw, lines };
  // The default: redraw when stderr is a terminal, else nothing; `asked` (--progress) prints
  // lines where there is no terminal, as a CI log wants them only when asked.
  static Style style_for(bool asked);

  ProgressMeter(Style style, std::FILE* out, double every_s = 10.0);
  ~ProgressMeter();  // ends the line it drew
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  // A new part of the command: its label ("[3/12] probe large-logits") and its size, layers per
  // step times steps (the reference's layer ticks it will see); total 0: unknown.
  void begin(std::string label, int layers_per_step, int steps);
  // RunOptions::on_event for the part: counts "reference_layer" and names the other phases.
  std::function<void(std::string_view)> observer();
  // Wipes a redrawn line before the command prints a line of its own.
  void clear();
  // What the meter would print now (tests).
  std::string line() const;

 private:
  using Clock = std::chrono::steady_clock;
  void event(std::string_view what);
  void draw();
  void tick();
  std::string line_locked(Clock::time_point now) const;

  Style style_;
  std::FILE* out_;
  double every_s_;
  mutable std::mutex m_;
  std::condition_variable wake_;
  bool stop_ = false, drawn_ = false;
  std::string label_, phase_;
  int layers_ = 0, steps_ = 0, done_ = 0;
  Clock::time_point start_ = Clock::now(), part_start_ = start_, last_draw_{};
  std::thread clock_;
};

}  // namespace ds
