// A header the repository finds through an include directory of its build (-I repo/include), not
// beside the file that includes it: the stage map's `include_dirs` hands that directory over.
#pragma once

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
