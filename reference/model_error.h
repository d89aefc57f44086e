// The one error type of model loading and the completeness gate. Its message always names
// the file (or preset) and the field or tensor at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace ds::ref {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // A message short enough for a terminal, and the full text it summarises (a list of hundreds
  // of missing tensors), kept for the trace and the JSON report.
  ModelError(const std::string& summary, std::string full)
      : std::runtime_error(summary), full_(std::move(full)) {}
  std::string full() const { return full_.empty() ? std::string(what()) : full_; }

 private:
  std::string full_;
};

}  // namespace ds::ref
