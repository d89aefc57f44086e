// <cooperative_groups/scan.h> on the CPU: not in the SIMT runtime's subset.
#pragma once
#error "cooperative_groups/scan.h is not supported by the SIMT runtime (docs/simt.md lists the cooperative-groups subset)"
