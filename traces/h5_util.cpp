#include "h5_util.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "trace_writer.h"

namespace ds::trace {

namespace {

// The file named by the handlers: copied outside them, since a signal handler may only write(2).
char g_path[1024];
std::size_t g_path_len = 0;
int g_guards = 0;
struct sigaction g_old_segv {
}, g_old_bus{}, g_old_alarm{};

void say(const char* text, std::size_t n) {
  [[maybe_unused]] const ssize_t w = ::write(STDERR_FILENO, text, n);
}
void say(std::string_view text) { say(text.data(), text.size()); }

// The instruction that faulted, from the signal's machine context.
const void* fault_pc(void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return reinterpret_cast<const void*>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return nullptr;
#endif
}

// The shared object an address lies in ("" when unknown).
const char* object_of(const void* pc) {
  Dl_info info{};
  return ::dladdr(pc, &info) && info.dli_fname ? info.dli_fname : "";
}

// A sanitizer's interceptor (memcpy and friends), wherever its runtime is linked: clang links it
// into the executable itself.
bool in_interceptor(const void* pc) {
  Dl_info info{};
  if (!::dladdr(pc, &info) || !info.dli_sname) return false;
  const std::string_view name = info.dli_sname;
  for (std::string_view p : {"__interceptor_", "___interceptor_", "__asan_", "__sanitizer_", "__ubsan_"})
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

bool in_object(const char* file, const char* name) { return std::strstr(file, name) != nullptr; }

// Only a fault inside the HDF5 library is its answer to a corrupt file: the faulting frame and
// the frames that called it, skipping the C runtime and sanitizer interceptors HDF5 calls into
// (its memcpy past a corrupt length faults in libc), reach libhdf5 before any other code. A fault
// in our own code is a bug that must crash as it would without the guard, so sanitizers, fuzzers
// and core dumps see it.
bool faulted_in_hdf5(void* context) {
  const void* pc = fault_pc(context);
  if (!pc) return true;  // no machine context on this architecture: the guard's old answer
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  int at = 0;
  while (at < n && frames[at] != pc) ++at;
  if (at == n) return in_object(object_of(pc), "libhdf5");
  for (; at < n; ++at) {
    const char* file = object_of(frames[at]);
    if (in_object(file, "libhdf5")) return true;
    const bool runtime = in_object(file, "/libc.so") || in_object(file, "/libc-") ||
                         in_object(file, "libasan") || in_object(file, "libubsan") ||
                         in_object(file, "/libz.so") || in_object(file, "libsz") ||
                         in_object(file, "libaec") || in_interceptor(frames[at]);
    if (!runtime) return false;
  }
  return false;
}

void on_fault(int, siginfo_t*, void* context) {
  if (!faulted_in_hdf5(context)) {
    // Give the signal back to whoever handled it before the guard; the faulting instruction
    // runs again and faults into that handler (or the default action).
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    sigaction(SIGBUS, &g_old_bus, nullptr);
    return;
  }
  say("error: ");
  say(g_path, g_path_len);
  say(": the HDF5 library crashed reading this file (a length it trusts is corrupt): corrupt trace\n");
  ::_exit(2);
}

void on_alarm(int) {
  say("error: ");
  say(g_path, g_path_len);
  say(": reading this file's metadata did not finish in time (the HDF5 library loops on corrupt metadata): "
      "corrupt trace\n");
  ::_exit(2);
}

void set_path(std::string_view path) {
  g_path_len = std::min(path.size(), sizeof g_path);
  std::memcpy(g_path, path.data(), g_path_len);
}

}  // namespace

ReadGuard::ReadGuard(const std::string& path, bool metadata)
    : previous_(g_path, g_path_len), metadata_(metadata) {
  set_path(path);
  if (metadata_) ::alarm(kMetadataReadSeconds);
  if (g_guards++ > 0) return;
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
  sa = {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, &g_old_alarm);
}

ReadGuard::~ReadGuard() {
  set_path(previous_);
  if (--g_guards > 0) {
    // The outer read goes on; its clock restarts (generous, never short).
    if (metadata_) ::alarm(kMetadataReadSeconds);
    return;
  }
  ::alarm(0);
  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
  sigaction(SIGALRM, &g_old_alarm, nullptr);
}

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

std::int64_t dataset_length(hid_t d, const std::string& path, std::string_view name,
                            std::int64_t max_elements) {
  const hid_t s = H5Dget_space(d);
  hsize_t dims[H5S_MAX_RANK] = {};
  const int rank = s < 0 ? -1 : H5Sget_simple_extent_ndims(s);
  if (rank == 1) H5Sget_simple_extent_dims(s, dims, nullptr);
  if (s >= 0) H5Sclose(s);
  if (rank != 1)
    throw TraceError(fmt::format("{}: dataset {} has rank {} (a trace's datasets are 1-D): corrupt trace",
                                 path, name, rank));
  if (dims[0] > hsize_t(max_elements))
    throw TraceError(
        fmt::format("{}: dataset {} claims {} elements, more than the {} a trace can hold: corrupt "
                    "trace",
                    path, name, dims[0], max_elements));
  return std::int64_t(dims[0]);
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

std::optional<nlohmann::json> read_json_dataset(hid_t loc, const char* name, const std::string& path) {
  const hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
  if (d < 0) return std::nullopt;
  std::optional<nlohmann::json> out;
  std::int64_t bytes = 0;
  try {
    bytes =
        dataset_length(d, path, name[0] == '/' ? std::string(name) : "/" + std::string(name), kMaxJsonBytes);
  } catch (...) {
    H5Dclose(d);
    throw;
  }
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
