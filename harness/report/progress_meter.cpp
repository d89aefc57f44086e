#include "progress_meter.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "progress.h"

namespace ds {

ProgressMeter::Style ProgressMeter::style_for(bool asked) {
  if (isatty(STDERR_FILENO)) return Style::redraw;
  return asked ? Style::lines : Style::off;
}

ProgressMeter::ProgressMeter(Style style, std::FILE* out, double every_s)
    : style_(style), out_(out), every_s_(every_s) {
  if (style_ == Style::off) return;
  // The clock: between events (a 20-second lm_head, a weight load) the line still moves.
  clock_ = std::thread([this] { tick(); });
}

ProgressMeter::~ProgressMeter() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  if (clock_.joinable()) clock_.join();
  if (style_ == Style::redraw && drawn_) fmt::print(out_, "\r\x1b[K");
  std::fflush(out_);
}

void ProgressMeter::begin(std::string label, int layers_per_step, int steps) {
  {
    std::lock_guard lock(m_);
    label_ = std::move(label);
    layers_ = layers_per_step;
    steps_ = steps;
    done_ = 0;
    phase_ = "starting";
    part_start_ = Clock::now();
  }
  // A log learns at once which part it is in; a terminal's line moves with the clock anyway.
  if (style_ == Style::lines) draw();
}

std::function<void(std::string_view)> ProgressMeter::observer() {
  if (style_ == Style::off) return {};
  return [this](std::string_view what) { event(what); };
}

void ProgressMeter::event(std::string_view what) {
  {
    std::lock_guard lock(m_);
    if (what == "reference_layer") {
      ++done_;
      phase_.clear();
    } else if (what == "load_weights") {
      phase_ = "loading weights";
    } else if (what == "candidate_load") {
      phase_ = "starting the candidate";
    } else if (what == "gate") {
      phase_ = "gates";
    }
  }
  // A terminal follows every layer; a log only every `every_s_` (the clock's job).
  if (style_ == Style::redraw) draw();
}

std::string ProgressMeter::line_locked(Clock::time_point now) const {
  const double part = std::chrono::duration<double>(now - part_start_).count();
  const int total = layers_ * steps_;
  if ((!phase_.empty() && done_ == 0) || total <= 0)
    return fmt::format("{}: {}, {} elapsed", label_, phase_.empty() ? "running" : phase_, clock_text(part));
  // More layers than announced (a batch file's sequences, which the caller could not count): no
  // bar and no estimate, which would claim an end the meter does not know.
  if (done_ > total) return fmt::format("{}: {} layers done, {} elapsed", label_, done_, clock_text(part));
  // done_ counts finished layer ticks; the one under way is the next.
  const int at = std::min(done_, total - 1);
  return fmt::format("{}: {} (step {}/{}, layer {}/{})", label_, progress_line(done_, total, part, 0.0),
                     at / layers_ + 1, steps_, at % layers_ + 1, layers_);
}

std::string ProgressMeter::line() const {
  std::lock_guard lock(m_);
  return line_locked(Clock::now());
}

void ProgressMeter::clear() {
  std::lock_guard lock(m_);
  if (style_ != Style::redraw || !drawn_) return;
  fmt::print(out_, "\r\x1b[K");
  std::fflush(out_);
  drawn_ = false;
}

void ProgressMeter::draw() {
  std::lock_guard lock(m_);
  if (label_.empty()) return;
  const Clock::time_point now = Clock::now();
  const std::string text = line_locked(now);
  last_draw_ = now;
  drawn_ = true;
  if (style_ == Style::redraw)
    fmt::print(out_, "\r{}\x1b[K", text);
  else
    fmt::print(out_, "{}\n", text);
  std::fflush(out_);
}

void ProgressMeter::tick() {
  std::unique_lock lock(m_);
  while (!stop_) {
    // A terminal's clock moves each second; a log gets a line every `every_s_`.
    const double wait_s = style_ == Style::redraw ? 1.0 : every_s_;
    wake_.wait_for(lock, std::chrono::duration<double>(wait_s));
    if (stop_) break;
    if (std::chrono::duration<double>(Clock::now() - last_draw_).count() + 1e-3 < wait_s) continue;
    lock.unlock();
    draw();
    lock.lock();
  }
}

}  // namespace ds
