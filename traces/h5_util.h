// Small HDF5 helpers shared by the trace writer, reader, case listing and merge.
#pragma once

#include <hdf5.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds::trace {

// Variable-length UTF-8, so that h5py reads attributes as str rather than bytes.
void write_string_attr(hid_t obj, const std::string& name, const std::string& value);
void write_int_attr(hid_t obj, const char* name, int value);
std::string read_string_attr(hid_t obj, const char* name);  // "" when absent
int read_int_attr(hid_t obj, const char* name);             // 0 when absent
std::int64_t dataset_size(hid_t d);                         // length of a 1-D dataset
std::vector<std::string> child_names(hid_t group);          // the group's links, by name
// A 1-D byte dataset holding JSON text (/run, /result); nullopt when absent, empty or not JSON
// (a run killed before it wrote its result leaves it so).
std::optional<nlohmann::json> read_json_dataset(hid_t loc, const char* name);
// Copies every attribute of `src` onto `dst`; false if one could not be copied.
bool copy_attributes(hid_t src, hid_t dst);
// "/summary" as a name relative to a case's group ("summary"), so one reader serves both a
// single trace (the file's root) and one case of a merged file (/cases/<k>).
inline const char* relative(const char* name) { return name[0] == '/' ? name + 1 : name; }

}  // namespace ds::trace
