// HDF5 trace format v1 (docs/trace-format.md): the summary-row layout and the names of every
// object in the file. Writer, reader and docs take these from here.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "launch_log.h"
#include "result.h"

namespace ds::trace {

inline constexpr const char* kSchema = "driftscope-trace";
inline constexpr int kVersion = 1;
inline constexpr const char* kSummary = "/summary";
inline constexpr const char* kRefPool = "/tensors/ref";
inline constexpr const char* kCandPool = "/tensors/cand";
inline constexpr const char* kTokenPool = "/per_token";
inline constexpr const char* kResult = "/result";  // JSON bytes, written when the run ends
// Inputs of the candidate steps that produced a failing stage, so `driftscope replay` can
// re-run one step alone.
inline constexpr const char* kInputPool = "/inputs/data";
inline constexpr const char* kInputIndex = "/inputs/index";
// One LaunchRow per kernel launch of the candidate (launch records, docs/trace-format.md).
inline constexpr const char* kLaunches = "/launches";
// A merged file (`driftscope merge`): root attribute kMerged = 1, each input run's whole tree
// under /cases/<k>, and /case_index with one CaseIndexRow per case.
inline constexpr const char* kMerged = "merged";
inline constexpr const char* kCases = "/cases";
inline constexpr const char* kCaseIndex = "/case_index";
inline constexpr const char* kMergedFrom = "merged_from";  // attribute of a case group: its source file
inline constexpr int kMaxRank = 4;
// What a reader accepts from a file before it sizes a buffer from it; a larger claim is a corrupt
// file (a real trace this large would hold hundreds of GB): rows of /summary and /inputs/index,
// bytes of /result, elements of one stored tensor.
inline constexpr std::int64_t kMaxRows = std::int64_t(1) << 26;
inline constexpr std::int64_t kMaxJsonBytes = std::int64_t(1) << 28;
inline constexpr std::int64_t kMaxTensorElements = std::int64_t(1) << 32;
// Metadata read attempts of a SWMR read (HDF5 sleeps 2^k ns before attempt k; its default is 100).
inline constexpr unsigned kSwmrReadAttempts = 16;
inline constexpr int kStageChars = 32;
inline constexpr int kNoteChars = 96;
inline constexpr int kKernelChars = 128;

// all: every stage's tensors; inputs: those and the inputs of every step (replay of any stage);
// failing: only failing stages' tensors; stats: none. A failing stage's step keeps its inputs in
// every mode.
enum class Capture { all, inputs, failing, stats };
std::string_view capture_name(Capture c);

// One row of /summary. POD so HDF5 reads and writes it directly.
struct SummaryRow {
  std::int32_t step, layer;
  char stage[kStageChars];
  std::uint8_t mode, status, cand_dtype, inf_agree;
  std::int32_t rank;
  std::int64_t shape[kMaxRank];
  std::int64_t numel;
  double max_abs;
  std::int64_t max_abs_index;
  double max_abs_ref, max_abs_cand, mean_abs, rms, max_rel, max_ulp, mean_ulp;
  std::int64_t ulp_hist[kUlpBuckets];
  double cosine, nmse, sqnr_db, ref_rms;
  std::int64_t mismatches, first_mismatch;
  double first_ref, first_cand;
  std::int64_t nan_ref, nan_cand, inf_ref, inf_cand, first_nan;
  double min_atol, min_rtol, atol, rtol;
  std::int64_t ref_offset, cand_offset, tokens_offset;  // into the pools; -1 when not captured
  std::int32_t n_tokens;
  char note[kNoteChars];
  std::uint8_t expected;                            // a missing/skipped stage the policy expected
  double floor_max_abs, floor_rms, floor_mean_abs;  // noise floor; NaN when not computed
  std::uint64_t cand_hash;                          // FNV-1a of the candidate's stored bytes; 0 when none
  double bias_slope, bias_se;                       // systematic error; NaN when not computed
  std::int32_t seq;                                 // the sequence of a batch run; 0 otherwise
  // The local check of a chained stage (result.h LocalCheck); NaN when not run.
  double local_max_abs, local_rms, local_noise_max_abs, local_noise_rms, local_scale, local_bias_slope,
      local_bias_se, carried_max_abs, carried_rms;
  // Its most outstanding column group (a head or a channel); local_groups 0: none (so in traces
  // written before these fields).
  double local_group_slope, local_group_se;
  std::int32_t local_group, local_groups, local_group_width;
};

// One captured input tensor of one candidate step (a row of /inputs/index).
struct InputRow {
  std::int32_t step, layer, pos0, n_tokens;
  std::uint8_t mode, dtype;
  char kernel_step[kStageChars];  // the candidate's step name
  char outputs[2 * kStageChars];  // the stages it produces, comma separated
  char name[kStageChars];         // the input's name ("x", "attn_norm", "cache:k_rope", ...)
  std::int32_t rank;
  std::int64_t shape[kMaxRank];
  std::int64_t offset;  // into /inputs/data
};
hid_t input_row_type();

// One kernel launch (a row of /launches), filed under the candidate step that made it.
struct LaunchRow {
  std::int32_t step, layer;
  std::uint8_t mode, emulated;
  char kernel_step[kStageChars];  // the candidate's step name
  char stages[2 * kStageChars];   // the catalog stages that step produces, comma separated
  char kernel[kKernelChars];      // demangled, without parameters
  char backend[8];                // "simt" or "cuda"
  std::uint32_t grid[3], block[3];
  std::uint64_t dyn_smem_bytes;
  double duration_us;  // emulated: CPU wall time of the SIMT runtime; otherwise GPU time (CUPTI)
};
hid_t launch_row_type();
// A step's stages as one string field ("q,k,v") of an InputRow or LaunchRow, and back.
std::string join_stages(const std::vector<std::string>& stages);
std::vector<std::string> split_stages(std::string_view joined);
LaunchRow to_launch_row(const StepLaunch& l);
StepLaunch from_launch_row(const LaunchRow& row);

// The compound type of SummaryRow (caller closes it).
hid_t summary_type();

SummaryRow to_row(const StageResult& r);
StageResult from_row(const SummaryRow& row);

}  // namespace ds::trace
