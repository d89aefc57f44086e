// The SIMT runtime's stand-in for the toolkit's <cooperative_groups/reduce.h>: cg::reduce and
// its operators are in simt/cooperative_groups.h.
#pragma once
#include "simt/cooperative_groups.h"
