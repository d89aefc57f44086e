// The SIMT runtime's stand-in for the toolkit's <cooperative_groups.h>, on the CPU only.
#pragma once
#include "simt/cooperative_groups.h"
