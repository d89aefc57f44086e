// One kernel mutant as a module of its own (kernels/mutants/CMakeLists.txt builds one per mutant,
// DS_MUTANT_NS naming it): the production SIMT kernels with that mutant's plant() applied, which
// driftscope dlopens when a run first asks for mutant:<name> (candidates/gpu/mutants.cpp). The
// module carries its own copy of the SIMT runtime, reached like a plugin's through the exported
// driftscope_simt_* setters.
#include "../kernels.h"

namespace dsk_simt::DS_MUTANT_NS {
void plant(dsk::KernelTable&);
}

extern "C" [[gnu::visibility("default")]] const dsk::KernelTable* driftscope_mutant_kernel_table() {
  static const dsk::KernelTable planted = [] {
    dsk::KernelTable t = dsk_simt::table();
    dsk_simt::DS_MUTANT_NS::plant(t);
    return t;
  }();
  return &planted;
}
