// Optional numeric fields of /summary that this build's SummaryRow does not know, such as the
// noise-floor metrics ("floor_max_abs", ...) a later trace version may add. Read by name so the
// viewer shows them when present and carries on when they are not.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ds::view {

// field name -> one value per summary row. Only members whose name starts with `prefix` are
// read. Any problem (no such fields, unreadable file) gives an empty map: extras never fail an open.
// `group` is the case's group in a merged file ("/" for a single trace).
std::map<std::string, std::vector<double>> read_summary_extras(const std::string& path,
                                                               const std::string& prefix = "floor_",
                                                               const std::string& group = "/");

}  // namespace ds::view
