#include "summary_extras.h"

#include <hdf5.h>

#include "trace_schema.h"

namespace ds::view {

std::map<std::string, std::vector<double>> read_summary_extras(const std::string& path,
                                                               const std::string& prefix,
                                                               const std::string& group) {
  std::map<std::string, std::vector<double>> out;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) return out;
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return out;
  const std::string summary = group == "/" ? std::string(trace::kSummary) : group + trace::kSummary;
  const hid_t d = H5Dopen2(f, summary.c_str(), H5P_DEFAULT);
  if (d >= 0) {
    const hid_t ft = H5Dget_type(d);
    const hid_t space = H5Dget_space(d);
    hsize_t n = 0;
    if (H5Tget_class(ft) == H5T_COMPOUND && H5Sget_simple_extent_dims(space, &n, nullptr) == 1) {
      const int members = H5Tget_nmembers(ft);
      for (int i = 0; i < members; ++i) {
        char* name = H5Tget_member_name(ft, unsigned(i));
        const std::string field = name ? name : "";
        H5free_memory(name);
        const H5T_class_t cls = H5Tget_member_class(ft, unsigned(i));
        if (field.rfind(prefix, 0) != 0 || (cls != H5T_FLOAT && cls != H5T_INTEGER)) continue;
        // A one-member compound selects that field by name; HDF5 converts it to double.
        const hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(double));
        H5Tinsert(mt, field.c_str(), 0, H5T_NATIVE_DOUBLE);
        std::vector<double> values(n);
        if (n == 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0)
          out[field] = std::move(values);
        H5Tclose(mt);
      }
    }
    H5Sclose(space);
    H5Tclose(ft);
    H5Dclose(d);
  }
  H5Fclose(f);
  return out;
}

}  // namespace ds::view
