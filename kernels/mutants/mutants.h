// The kernel mutants: each kernels/mutants/<name>.patch is one production kernel with one planted
// bug (each <name>.cu a production kernel called the wrong way), built like kernels/*.cu by nvcc and
// through SIMT. A mutant's KernelTable is the production table with the entries its bug touches replaced;
// the production kernels know nothing of them. docs/mutants.md lists each mutant and where the
// harness must first catch it. C++17, like kernels.h.
#pragma once

#include <string>
#include <vector>

#include "../kernels.h"

namespace dsk_simt {
// The production table with mutant `name` planted (its file name with '-' for '_'), or null when no
// mutant has that name.
const dsk::KernelTable* mutant_table(const std::string& name);
// Every mutant's name, in table order.
std::vector<std::string> mutant_names();
}  // namespace dsk_simt
namespace dsk_cuda {
const dsk::KernelTable* mutant_table(const std::string& name);
std::vector<std::string> mutant_names();
}  // namespace dsk_cuda
