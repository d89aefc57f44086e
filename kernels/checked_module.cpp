// The production kernels (ds_kernels) in their CHECKED flavour, as a module of their own: every
// load and store of kernels/*.cu checked against the hazard checker's shadow (docs/simt.md, "The
// hazard checker with access hooks"). A module holds kernels of one flavour, so the checked build
// cannot sit beside the plain one in driftscope; driftscope dlopens this module when a run asks
// for the hazard checker (`--simt-racecheck`, and so `check` and `verify`) and drives the `simt`
// candidate through its table (candidates/gpu/checked_kernels.h). The module carries its own copy
// of the SIMT runtime, reached like a plugin's through the exported driftscope_simt_* setters.
#include "kernels.h"

extern "C" [[gnu::visibility("default")]] const dsk::KernelTable* driftscope_checked_kernel_table() {
  return &dsk_simt::table();
}
