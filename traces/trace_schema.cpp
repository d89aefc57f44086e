#include "trace_schema.h"

#include <algorithm>
#include <cstring>

namespace ds::trace {

std::string_view capture_name(Capture c) {
  switch (c) {
    case Capture::all: return "all";
    case Capture::inputs: return "inputs";
    case Capture::failing: return "failing";
    case Capture::stats: return "stats";
  }
  return "?";
}

hid_t summary_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(SummaryRow));
  const hid_t stage_t = H5Tcopy(H5T_C_S1);
  H5Tset_size(stage_t, kStageChars);
  const hid_t note_t = H5Tcopy(H5T_C_S1);
  H5Tset_size(note_t, kNoteChars);
  const hsize_t rank_dims[1] = {kMaxRank}, hist_dims[1] = {kUlpBuckets};
  const hid_t shape_t = H5Tarray_create2(H5T_NATIVE_INT64, 1, rank_dims);
  const hid_t hist_t = H5Tarray_create2(H5T_NATIVE_INT64, 1, hist_dims);
#define DS_FIELD(name, type) H5Tinsert(t, #name, HOFFSET(SummaryRow, name), type)
  DS_FIELD(step, H5T_NATIVE_INT32);
  DS_FIELD(layer, H5T_NATIVE_INT32);
  DS_FIELD(stage, stage_t);
  DS_FIELD(mode, H5T_NATIVE_UINT8);
  DS_FIELD(status, H5T_NATIVE_UINT8);
  DS_FIELD(cand_dtype, H5T_NATIVE_UINT8);
  DS_FIELD(inf_agree, H5T_NATIVE_UINT8);
  DS_FIELD(rank, H5T_NATIVE_INT32);
  DS_FIELD(shape, shape_t);
  DS_FIELD(numel, H5T_NATIVE_INT64);
  DS_FIELD(max_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(max_abs_index, H5T_NATIVE_INT64);
  DS_FIELD(max_abs_ref, H5T_NATIVE_DOUBLE);
  DS_FIELD(max_abs_cand, H5T_NATIVE_DOUBLE);
  DS_FIELD(mean_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(max_rel, H5T_NATIVE_DOUBLE);
  DS_FIELD(max_ulp, H5T_NATIVE_DOUBLE);
  DS_FIELD(mean_ulp, H5T_NATIVE_DOUBLE);
  DS_FIELD(ulp_hist, hist_t);
  DS_FIELD(cosine, H5T_NATIVE_DOUBLE);
  DS_FIELD(nmse, H5T_NATIVE_DOUBLE);
  DS_FIELD(sqnr_db, H5T_NATIVE_DOUBLE);
  DS_FIELD(ref_rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(mismatches, H5T_NATIVE_INT64);
  DS_FIELD(first_mismatch, H5T_NATIVE_INT64);
  DS_FIELD(first_ref, H5T_NATIVE_DOUBLE);
  DS_FIELD(first_cand, H5T_NATIVE_DOUBLE);
  DS_FIELD(nan_ref, H5T_NATIVE_INT64);
  DS_FIELD(nan_cand, H5T_NATIVE_INT64);
  DS_FIELD(inf_ref, H5T_NATIVE_INT64);
  DS_FIELD(inf_cand, H5T_NATIVE_INT64);
  DS_FIELD(first_nan, H5T_NATIVE_INT64);
  DS_FIELD(min_atol, H5T_NATIVE_DOUBLE);
  DS_FIELD(min_rtol, H5T_NATIVE_DOUBLE);
  DS_FIELD(atol, H5T_NATIVE_DOUBLE);
  DS_FIELD(rtol, H5T_NATIVE_DOUBLE);
  DS_FIELD(ref_offset, H5T_NATIVE_INT64);
  DS_FIELD(cand_offset, H5T_NATIVE_INT64);
  DS_FIELD(tokens_offset, H5T_NATIVE_INT64);
  DS_FIELD(n_tokens, H5T_NATIVE_INT32);
  DS_FIELD(note, note_t);
  DS_FIELD(expected, H5T_NATIVE_UINT8);
  DS_FIELD(floor_max_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(floor_rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(floor_mean_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(cand_hash, H5T_NATIVE_UINT64);
  DS_FIELD(bias_slope, H5T_NATIVE_DOUBLE);
  DS_FIELD(bias_se, H5T_NATIVE_DOUBLE);
  DS_FIELD(seq, H5T_NATIVE_INT32);
  DS_FIELD(local_max_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_noise_max_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_noise_rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_scale, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_bias_slope, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_bias_se, H5T_NATIVE_DOUBLE);
  DS_FIELD(carried_max_abs, H5T_NATIVE_DOUBLE);
  DS_FIELD(carried_rms, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_group_slope, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_group_se, H5T_NATIVE_DOUBLE);
  DS_FIELD(local_group, H5T_NATIVE_INT32);
  DS_FIELD(local_groups, H5T_NATIVE_INT32);
  DS_FIELD(local_group_width, H5T_NATIVE_INT32);
#undef DS_FIELD
  H5Tclose(stage_t);
  H5Tclose(note_t);
  H5Tclose(shape_t);
  H5Tclose(hist_t);
  return t;
}

hid_t input_row_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(InputRow));
  const hid_t s32 = H5Tcopy(H5T_C_S1), s64 = H5Tcopy(H5T_C_S1);
  H5Tset_size(s32, kStageChars);
  H5Tset_size(s64, 2 * kStageChars);
  const hsize_t rank_dims[1] = {kMaxRank};
  const hid_t shape_t = H5Tarray_create2(H5T_NATIVE_INT64, 1, rank_dims);
#define DS_FIELD(name, type) H5Tinsert(t, #name, HOFFSET(InputRow, name), type)
  DS_FIELD(step, H5T_NATIVE_INT32);
  DS_FIELD(layer, H5T_NATIVE_INT32);
  DS_FIELD(pos0, H5T_NATIVE_INT32);
  DS_FIELD(n_tokens, H5T_NATIVE_INT32);
  DS_FIELD(mode, H5T_NATIVE_UINT8);
  DS_FIELD(dtype, H5T_NATIVE_UINT8);
  DS_FIELD(kernel_step, s32);
  DS_FIELD(outputs, s64);
  DS_FIELD(name, s32);
  DS_FIELD(rank, H5T_NATIVE_INT32);
  DS_FIELD(shape, shape_t);
  DS_FIELD(offset, H5T_NATIVE_INT64);
#undef DS_FIELD
  H5Tclose(s32);
  H5Tclose(s64);
  H5Tclose(shape_t);
  return t;
}

hid_t launch_row_type() {
  const hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(LaunchRow));
  const hid_t s32 = H5Tcopy(H5T_C_S1), s64 = H5Tcopy(H5T_C_S1), sk = H5Tcopy(H5T_C_S1),
              s8 = H5Tcopy(H5T_C_S1);
  H5Tset_size(s32, kStageChars);
  H5Tset_size(s64, 2 * kStageChars);
  H5Tset_size(sk, kKernelChars);
  H5Tset_size(s8, 8);
  const hsize_t three[1] = {3};
  const hid_t dim3_t = H5Tarray_create2(H5T_NATIVE_UINT32, 1, three);
#define DS_FIELD(name, type) H5Tinsert(t, #name, HOFFSET(LaunchRow, name), type)
  DS_FIELD(step, H5T_NATIVE_INT32);
  DS_FIELD(layer, H5T_NATIVE_INT32);
  DS_FIELD(mode, H5T_NATIVE_UINT8);
  DS_FIELD(emulated, H5T_NATIVE_UINT8);
  DS_FIELD(kernel_step, s32);
  DS_FIELD(stages, s64);
  DS_FIELD(kernel, sk);
  DS_FIELD(backend, s8);
  DS_FIELD(grid, dim3_t);
  DS_FIELD(block, dim3_t);
  DS_FIELD(dyn_smem_bytes, H5T_NATIVE_UINT64);
  DS_FIELD(duration_us, H5T_NATIVE_DOUBLE);
#undef DS_FIELD
  for (hid_t x : {s32, s64, sk, s8, dim3_t}) H5Tclose(x);
  return t;
}

namespace {
template <std::size_t N>
void copy_str(char (&dst)[N], const std::string& s) {
  std::memset(dst, 0, N);
  std::memcpy(dst, s.data(), std::min(s.size(), N - 1));
}
template <std::size_t N>
std::string read_str(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}
}  // namespace

std::string join_stages(const std::vector<std::string>& stages) {
  std::string out;
  for (const auto& s : stages) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> split_stages(std::string_view joined) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < joined.size();) {
    const std::size_t comma = std::min(joined.find(',', at), joined.size());
    out.emplace_back(joined.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

LaunchRow to_launch_row(const StepLaunch& l) {
  LaunchRow row{};
  row.step = l.step;
  row.layer = l.layer;
  row.mode = std::uint8_t(l.mode);
  row.emulated = l.launch.emulated ? 1 : 0;
  copy_str(row.kernel_step, l.kernel_step);
  copy_str(row.stages, join_stages(l.stages));
  copy_str(row.kernel, l.launch.kernel);
  copy_str(row.backend, l.launch.backend);
  for (int i = 0; i < 3; ++i) {
    row.grid[i] = l.launch.grid[std::size_t(i)];
    row.block[i] = l.launch.block[std::size_t(i)];
  }
  row.dyn_smem_bytes = l.launch.dyn_smem_bytes;
  row.duration_us = l.launch.duration_us;
  return row;
}

StepLaunch from_launch_row(const LaunchRow& row) {
  StepLaunch l;
  l.step = row.step;
  l.layer = row.layer;
  l.mode = row.mode == std::uint8_t(Mode::chained) ? Mode::chained : Mode::isolated;
  l.kernel_step = read_str(row.kernel_step);
  l.stages = split_stages(read_str(row.stages));
  l.launch.kernel = read_str(row.kernel);
  l.launch.backend = read_str(row.backend);
  for (int i = 0; i < 3; ++i) {
    l.launch.grid[std::size_t(i)] = row.grid[i];
    l.launch.block[std::size_t(i)] = row.block[i];
  }
  l.launch.dyn_smem_bytes = row.dyn_smem_bytes;
  l.launch.duration_us = row.duration_us;
  l.launch.emulated = row.emulated != 0;
  return l;
}

SummaryRow to_row(const StageResult& r) {
  SummaryRow row{};
  row.step = r.key.step;
  row.layer = r.key.layer;
  copy_str(row.stage, r.key.stage);
  row.mode = std::uint8_t(r.mode);
  row.status = std::uint8_t(r.status);
  row.cand_dtype = std::uint8_t(r.cand_dtype);
  const auto& m = r.m;
  row.inf_agree = m.inf_agree;
  row.rank = std::int32_t(std::min<std::size_t>(r.shape.size(), kMaxRank));
  for (int i = 0; i < row.rank; ++i) row.shape[i] = r.shape[std::size_t(i)];
  row.numel = m.numel;
  row.max_abs = m.max_abs;
  row.max_abs_index = m.max_abs_index;
  row.max_abs_ref = m.max_abs_ref;
  row.max_abs_cand = m.max_abs_cand;
  row.mean_abs = m.mean_abs;
  row.rms = m.rms;
  row.max_rel = m.max_rel;
  row.max_ulp = m.max_ulp;
  row.mean_ulp = m.mean_ulp;
  std::copy(m.ulp_hist.begin(), m.ulp_hist.end(), row.ulp_hist);
  row.cosine = m.cosine;
  row.nmse = m.nmse;
  row.sqnr_db = m.sqnr_db;
  row.ref_rms = m.ref_rms;
  row.mismatches = m.mismatches;
  row.first_mismatch = m.first_mismatch;
  row.first_ref = m.first_ref;
  row.first_cand = m.first_cand;
  row.nan_ref = m.nan_ref;
  row.nan_cand = m.nan_cand;
  row.inf_ref = m.inf_ref;
  row.inf_cand = m.inf_cand;
  row.first_nan = m.first_nan;
  row.min_atol = m.min_atol;
  row.min_rtol = m.min_rtol;
  row.atol = m.atol;
  row.rtol = m.rtol;
  row.ref_offset = row.cand_offset = row.tokens_offset = -1;
  copy_str(row.note, r.note);
  row.expected = r.expected;
  row.floor_max_abs = r.floor_max_abs;
  row.floor_rms = r.floor_rms;
  row.floor_mean_abs = r.floor_mean_abs;
  row.cand_hash = r.cand_hash;
  row.bias_slope = r.bias_slope;
  row.bias_se = r.bias_se;
  row.seq = r.key.seq;
  row.local_max_abs = r.local.max_abs;
  row.local_rms = r.local.rms;
  row.local_noise_max_abs = r.local.noise_max_abs;
  row.local_noise_rms = r.local.noise_rms;
  row.local_scale = r.local.scale;
  row.local_bias_slope = r.local.bias_slope;
  row.local_bias_se = r.local.bias_se;
  row.carried_max_abs = r.local.carried_max_abs;
  row.carried_rms = r.local.carried_rms;
  row.local_group_slope = r.local.group_slope;
  row.local_group_se = r.local.group_se;
  row.local_group = r.local.group;
  row.local_groups = r.local.groups;
  row.local_group_width = r.local.group_width;
  return row;
}

StageResult from_row(const SummaryRow& row) {
  StageResult r;
  r.key = {row.step, row.layer, read_str(row.stage), row.seq};
  r.mode = Mode(row.mode);
  r.status = Status(row.status);
  r.cand_dtype = DType(row.cand_dtype);
  r.shape.assign(row.shape, row.shape + std::clamp(row.rank, 0, kMaxRank));
  auto& m = r.m;
  m.inf_agree = row.inf_agree;
  m.numel = row.numel;
  m.max_abs = row.max_abs;
  m.max_abs_index = row.max_abs_index;
  m.max_abs_ref = row.max_abs_ref;
  m.max_abs_cand = row.max_abs_cand;
  m.mean_abs = row.mean_abs;
  m.rms = row.rms;
  m.max_rel = row.max_rel;
  m.max_ulp = row.max_ulp;
  m.mean_ulp = row.mean_ulp;
  std::copy(row.ulp_hist, row.ulp_hist + kUlpBuckets, m.ulp_hist.begin());
  m.cosine = row.cosine;
  m.nmse = row.nmse;
  m.sqnr_db = row.sqnr_db;
  m.ref_rms = row.ref_rms;
  m.mismatches = row.mismatches;
  m.first_mismatch = row.first_mismatch;
  m.first_ref = row.first_ref;
  m.first_cand = row.first_cand;
  m.nan_ref = row.nan_ref;
  m.nan_cand = row.nan_cand;
  m.inf_ref = row.inf_ref;
  m.inf_cand = row.inf_cand;
  m.first_nan = row.first_nan;
  m.min_atol = row.min_atol;
  m.min_rtol = row.min_rtol;
  m.atol = row.atol;
  m.rtol = row.rtol;
  r.note = read_str(row.note);
  r.expected = row.expected != 0;
  r.floor_max_abs = row.floor_max_abs;
  r.floor_rms = row.floor_rms;
  r.floor_mean_abs = row.floor_mean_abs;
  r.cand_hash = row.cand_hash;
  r.bias_slope = row.bias_slope;
  r.bias_se = row.bias_se;
  // A trace written before the local check has these fields as zeros, not NaN: not run.
  if (row.local_scale != 0 || row.local_max_abs != 0) {
    r.local.max_abs = row.local_max_abs;
    r.local.rms = row.local_rms;
    r.local.noise_max_abs = row.local_noise_max_abs;
    r.local.noise_rms = row.local_noise_rms;
    r.local.scale = row.local_scale;
    r.local.bias_slope = row.local_bias_slope;
    r.local.bias_se = row.local_bias_se;
    r.local.carried_max_abs = row.carried_max_abs;
    r.local.carried_rms = row.carried_rms;
    if (row.local_groups > 0) {
      r.local.group_slope = row.local_group_slope;
      r.local.group_se = row.local_group_se;
      r.local.group = row.local_group;
      r.local.groups = row.local_groups;
      r.local.group_width = row.local_group_width;
    }
  }
  return r;
}

}  // namespace ds::trace
