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
// The length of dataset `d` (called `name` in `path`, for messages), checked before any buffer is
// sized from it: a corrupt file must not make a reader overflow (a 2-D dataset read into a 1-D
// buffer) or allocate without bound. Throws TraceError naming the dataset unless it is 1-D and
// holds at most `max_elements`.
std::int64_t dataset_length(hid_t d, const std::string& path, std::string_view name,
                            std::int64_t max_elements);
std::vector<std::string> child_names(hid_t group);  // the group's links, by name
// A 1-D byte dataset holding JSON text (/run, /result); nullopt when absent, empty or not JSON
// (a run killed before it wrote its result leaves it so). Throws TraceError when it is not 1-D
// or implausibly large (dataset_length).
std::optional<nlohmann::json> read_json_dataset(hid_t loc, const char* name, const std::string& path);
// Copies every attribute of `src` onto `dst`; false if one could not be copied.
bool copy_attributes(hid_t src, hid_t dst);
// HDF5 trusts some lengths it reads without a checksum (the global heap holding variable-length
// strings), so a corrupt file can make the library itself read out of bounds or loop forever,
// beyond any check a caller can make first. While a guard is alive, SIGSEGV and SIGBUS inside the
// HDF5 library end the process with exit 2 and a one-line error naming `path`, as every other
// corrupt trace does (a fault in any other code crashes as it would without the guard); a
// `metadata` guard also ends it (exit 2) when it lives longer than kMetadataReadSeconds, which no
// metadata read of a sound file comes near (bulk tensor reads use a guard without the deadline).
// Guards nest; the innermost path is named.
inline constexpr unsigned kMetadataReadSeconds = 20;
class ReadGuard {
 public:
  explicit ReadGuard(const std::string& path, bool metadata = true);
  ~ReadGuard();
  ReadGuard(const ReadGuard&) = delete;
  ReadGuard& operator=(const ReadGuard&) = delete;

 private:
  std::string previous_;
  bool metadata_;
};

// "/summary" as a name relative to a case's group ("summary"), so one reader serves both a
// single trace (the file's root) and one case of a merged file (/cases/<k>).
inline const char* relative(const char* name) { return name[0] == '/' ? name + 1 : name; }

}  // namespace ds::trace
