// Host launchers of the hazard test kernels (hazard_kernels.cu): races the access-hooked checker
// (the CHECKED flavour, Config::racecheck) finds and the fault-based one does not, and their
// race-free twins.
#pragma once

namespace simt_test {

// Each reads in[0 .. 64) and writes out[0 .. 64).
enum class HazardKernel {
  static_shared_ok,          // warp partials in a static __shared__ array, barrier, reads
  static_shared_no_barrier,  // the same with no barrier between the partials' writes and reads
  neighbour_output,          // 4 blocks: block b writes out[b], then reads out[b + 1] (another block's)
  own_output,                // 4 blocks: block b writes out[b], then reads it back
  plain_read_of_atomic,      // 2 blocks: block 0 atomically adds into out[0], block 1 reads it plainly
  uninit_dynamic_shared,     // stages 32 of 64 dynamic shared slots, then reads all 64
  uninit_static_shared,      // the same in a static __shared__ array
  uninit_static_half,        // the same in a static __shared__ __half array
  shared_plus_equals,        // threads t and t + 32 both add into slot t % 32, no barrier between
  shared_tree_ok,            // a tree sum: s[t] += s[t + stride], a barrier after every level
  late_reader_writes,        // every thread reads s[0], thread 40 then stores into it, no barrier between
  uninit_after_other_block,  // 2 blocks: block 0 writes its shared slots, block 1 reads its own unwritten
  reread_then_write,         // threads 0, 1 read s[0]; __syncwarp; thread 1 reads it again, thread 2 stores
};

void hazard_kernel(HazardKernel k, const float* in, float* out);

// Reads of global memory under a poison (Config::poison): one block of 64 threads, each writes
// out[t]; `scratch` holds 64 floats.
enum class GlobalReadKernel {
  read_input,           // out[t] = 2 * in[t]
  read_back_own_write,  // scratch[t] = in[t], barrier, out[t] = scratch[63 - t]
  read_back_half,       // scratch[t] = in[t] for t < 32 only, barrier, out[t] = scratch[t]
};

void global_read_kernel(GlobalReadKernel k, const float* in, float* scratch, float* out);

}  // namespace simt_test
