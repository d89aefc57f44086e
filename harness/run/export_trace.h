// `driftscope export`: the reference's stage tensors of a trace (and its prompt) as files an
// engine's own tests can load as golden data, under catalog names or a dump mapping's names
// (docs/dumps.md). The directory it writes is itself a dump: `--candidate dump:OUT` reads it.
#pragma once

#include <string>

#include "dtype.h"

namespace ds {

struct ExportOptions {
  std::string trace, out;
  std::string format;   // "safetensors" or "npy"; with a mapping, empty (its files say) or matching
  std::string stages;   // regex on the stage name; empty: every stage
  std::string mapping;  // a dump mapping (YAML): its names and layouts instead of the catalog's
  int case_index = -1;  // a merged file's case
  DType dtype = DType::f32;
};

struct ExportSummary {
  std::size_t tensors = 0, files = 0;
  std::string mapping;  // the mapping written into `out`
};

// Throws InputError (exit 2) naming the trace, the mapping or the file that cannot be written.
ExportSummary export_trace(const ExportOptions& opt);

}  // namespace ds
