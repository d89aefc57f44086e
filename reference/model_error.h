// The one error type of model loading and the completeness gate. Its message always names
// the file (or preset) and the field or tensor at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace ds::ref {

class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ds::ref
