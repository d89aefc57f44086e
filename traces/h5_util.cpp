#include "h5_util.h"

#include <algorithm>
#include <cstring>

namespace ds::trace {

void write_string_attr(hid_t obj, const std::string& name, const std::string& value) {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name.c_str(), t, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* v = value.c_str();
  H5Awrite(a, t, &v);
  H5Aclose(a);
  H5Sclose(space);
  H5Tclose(t);
}

void write_int_attr(hid_t obj, const char* name, int value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(obj, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT, &value);
  H5Aclose(a);
  H5Sclose(space);
}

std::string read_string_attr(hid_t obj, const char* name) {
  if (H5Aexists(obj, name) <= 0) return {};
  const hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  const hid_t t = H5Aget_type(a);
  std::string out;
  if (H5Tget_class(t) == H5T_STRING) {
    if (H5Tis_variable_str(t) > 0) {
      char* s = nullptr;
      const hid_t mt = H5Tcopy(H5T_C_S1);
      H5Tset_size(mt, H5T_VARIABLE);
      H5Tset_cset(mt, H5Tget_cset(t));  // HDF5 does not convert between character sets
      if (H5Aread(a, mt, &s) >= 0 && s) out = s;
      H5free_memory(s);
      H5Tclose(mt);
    } else {
      out.resize(H5Tget_size(t));
      H5Aread(a, t, out.data());
      out.resize(strnlen(out.c_str(), out.size()));
    }
  }
  H5Tclose(t);
  H5Aclose(a);
  return out;
}

int read_int_attr(hid_t obj, const char* name) {
  int v = 0;
  if (H5Aexists(obj, name) <= 0) return 0;
  const hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_INT, &v);
  H5Aclose(a);
  return v;
}

std::int64_t dataset_size(hid_t d) {
  const hid_t s = H5Dget_space(d);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(s, &n, nullptr);
  H5Sclose(s);
  return std::int64_t(n);
}

namespace {

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

herr_t copy_attribute(hid_t src, const char* name, const H5A_info_t*, void* dst_ptr) {
  const hid_t dst = *static_cast<hid_t*>(dst_ptr);
  const hid_t a = H5Aopen(src, name, H5P_DEFAULT);
  if (a < 0) return -1;
  const hid_t t = H5Aget_type(a), space = H5Aget_space(a);
  herr_t rc = 0;
  if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0) {
    write_string_attr(dst, name, read_string_attr(src, name));
  } else {
    // Fixed-size values (the version number, ...) copy as raw bytes in their own type.
    std::vector<unsigned char> buf(H5Tget_size(t) *
                                   std::size_t(std::max<hssize_t>(H5Sget_simple_extent_npoints(space), 1)));
    const hid_t b = H5Acreate2(dst, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    rc = b < 0 || H5Aread(a, t, buf.data()) < 0 || H5Awrite(b, t, buf.data()) < 0 ? -1 : 0;
    if (b >= 0) H5Aclose(b);
  }
  H5Sclose(space);
  H5Tclose(t);
  H5Aclose(a);
  return rc;
}

}  // namespace

std::vector<std::string> child_names(hid_t group) {
  std::vector<std::string> names;
  H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_name, &names);
  return names;
}

bool copy_attributes(hid_t src, hid_t dst) {
  hsize_t idx = 0;
  return H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, copy_attribute, &dst) >= 0;
}

std::optional<nlohmann::json> read_json_dataset(hid_t loc, const char* name) {
  const hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
  if (d < 0) return std::nullopt;
  std::optional<nlohmann::json> out;
  const std::int64_t bytes = dataset_size(d);
  if (bytes > 0) {
    std::string s(std::size_t(bytes), '\0');
    if (H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()) >= 0) {
      try {
        out = nlohmann::json::parse(s);
      } catch (const std::exception&) {
        out.reset();
      }
    }
  }
  H5Dclose(d);
  return out;
}

}  // namespace ds::trace
