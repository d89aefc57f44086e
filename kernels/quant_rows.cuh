// Block-quantized weight rows, as a GGUF stores them (ggml's Q8_0 ... Q6_K, IQ4_NL, IQ4_XS), read by
// the projection kernels without a decoded copy of the matrix: a lane decodes 32 elements at a time
// into registers and multiplies them into its partial dot products right there. An 8B model held
// as Q4_K_M then takes its file's 4.7 GiB on the device, where an f32 copy would take 30.
//
// Every type's block is a whole number of 32-element chunks (32 or 256 elements), so chunk j of a
// row lies in one block. decode_chunk32 gives, element for element, the value the reference's
// dequantizer (reference/loaders/dequant_32.cpp, dequant_256.cpp) computes: the same products in
// the same order, and __fmul_rn / __fadd_rn where a product meets a sum, since nvcc would otherwise
// fuse the two into an FMA and the decoded weight would differ from the reference's in its last bit.
#pragma once

namespace DSK_NS {

// A quantized matrix as a kernel operand: its bytes, its type and the bytes of one row.
struct QRows {
  const unsigned char* p;
  dsk::WType type;
  std::size_t row_bytes;
};

// Row `row` of a weight operand: a plain matrix's element pointer, or a quantized one's row bytes.
template <class W>
__device__ inline const W* weight_row(const W* w, std::size_t row, int cols) {
  return w + row * static_cast<std::size_t>(cols);
}
__device__ inline QRows weight_row(QRows w, std::size_t row, int) {
  return {w.p + row * w.row_bytes, w.type, w.row_bytes};
}

// The operand a launch hands its kernel for a matrix of type wt, [.., cols]: `f` is called with
// `const float*`, `const __half*`, `const __nv_bfloat16*` or QRows.
template <class F>
inline void with_weight(const void* W, dsk::WType wt, int cols, F&& f) {
  switch (wt) {
    case dsk::WType::f32: f(static_cast<const float*>(W)); break;
    case dsk::WType::f16: f(static_cast<const __half*>(W)); break;
    case dsk::WType::bf16: f(static_cast<const __nv_bfloat16*>(W)); break;
    default: f(QRows{static_cast<const unsigned char*>(W), wt, dsk::weight_row_bytes(wt, cols)}); break;
  }
}
// A second matrix of the same type as `like` (gate beside up, alpha beside beta).
template <class W>
inline const W* same_kind(const W*, const void* W2) {
  return static_cast<const W*>(W2);
}
inline QRows same_kind(QRows like, const void* W2) {
  return {static_cast<const unsigned char*>(W2), like.type, like.row_bytes};
}

__device__ inline float half_at(const unsigned char* b) {
  __half h;
  memcpy(&h, b, 2);
  return __half2float(h);
}

// IQ4_NL's and IQ4_XS's sixteen non-uniform levels.
__device__ inline float iq4_level(int q) {
  const signed char levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  return static_cast<float>(levels[q]);
}

// get_scale_min_k4: the 6-bit scale and min of sub-block j from Q4_K's / Q5_K's 12 packed bytes.
__device__ inline void scale_min_k4(int j, const unsigned char* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// The blocks of 32: an f16 scale (and min), 16 bytes of nibbles (element l low, l + 16 high), the
// 5-bit types' fifth bits in a 32-bit mask; Q8_0 is 32 signed bytes.
__device__ inline void decode_block32(dsk::WType t, const unsigned char* blk, float* y) {
  if (t == dsk::WType::q8_0) {  // the common one: copies of a size the compiler knows
    signed char q[32];
    memcpy(q, blk + 2, sizeof q);
    const float d = half_at(blk);
    for (int l = 0; l < 32; ++l) y[l] = static_cast<float>(q[l]) * d;
    return;
  }
  unsigned char b[34];
  const int bytes = dsk::quant_block(t).bytes;
  memcpy(b, blk, static_cast<std::size_t>(bytes));  // one load of the whole block
  const float d = half_at(b);
  const bool has_min = t == dsk::WType::q4_1 || t == dsk::WType::q5_1;
  const bool five = t == dsk::WType::q5_0 || t == dsk::WType::q5_1;
  const float m = has_min ? half_at(b + 2) : 0.0f;
  unsigned int qh = 0;
  if (five) memcpy(&qh, b + (has_min ? 4 : 2), 4);
  const unsigned char* qs = b + bytes - 16;
  for (int l = 0; l < 16; ++l) {
    int lo = qs[l] & 0xF, hi = qs[l] >> 4;
    if (t == dsk::WType::iq4_nl) {
      y[l] = d * iq4_level(lo);
      y[l + 16] = d * iq4_level(hi);
      continue;
    }
    if (five) {
      lo |= static_cast<int>((qh >> l) & 1u) << 4;
      hi |= static_cast<int>((qh >> (l + 16)) & 1u) << 4;
    }
    if (has_min) {
      y[l] = __fadd_rn(__fmul_rn(static_cast<float>(lo), d), m);
      y[l + 16] = __fadd_rn(__fmul_rn(static_cast<float>(hi), d), m);
    } else {
      const int zero = five ? 16 : 8;
      y[l] = static_cast<float>(lo - zero) * d;
      y[l + 16] = static_cast<float>(hi - zero) * d;
    }
  }
}

// The two bits of element 32 j + l of a Q2_K / Q3_K block's 64 packed bytes (byte l of each
// 32-byte group holds elements l, l + 32, l + 64, l + 96 of its 128 in bit pairs).
__device__ inline int two_bits(const unsigned char* qs, int j, int l) {
  return (qs[(j / 4) * 32 + l] >> (2 * (j % 4))) & 3;
}

// Chunk j (elements 32 j ..) of a 256-element super-block.
__device__ inline void decode_chunk256(dsk::WType t, const unsigned char* b, int j, float* y) {
  switch (t) {
    case dsk::WType::q2_k: {  // scales[16] (scale, min nibbles), qs[64], d, dmin
      unsigned char s[2], qs[64];
      memcpy(s, b + 2 * j, 2);
      memcpy(qs, b + 16, 64);
      const float d = half_at(b + 80), dmin = half_at(b + 82);
      for (int h = 0; h < 2; ++h) {
        const float dl = d * static_cast<float>(s[h] & 0xF), ml = dmin * static_cast<float>(s[h] >> 4);
        for (int l = 16 * h; l < 16 * h + 16; ++l)
          y[l] = __fadd_rn(__fmul_rn(dl, static_cast<float>(two_bits(qs, j, l))), -ml);
      }
      return;
    }
    case dsk::WType::q3_k: {  // hmask[32], qs[64], scales[12] (6 bits, biased by 32), d
      unsigned char hmask[32], qs[64], sc[12];
      memcpy(hmask, b, 32);
      memcpy(qs, b + 32, 64);
      memcpy(sc, b + 96, 12);
      const float d = half_at(b + 108);
      for (int h = 0; h < 2; ++h) {
        const int k = 2 * j + h;  // sub-block of 16
        const int lo = k < 8 ? sc[k] & 0xF : sc[k - 8] >> 4;
        const float dl = d * static_cast<float>((lo | ((sc[8 + k % 4] >> (2 * (k / 4))) & 3) << 4) - 32);
        for (int l = 16 * h; l < 16 * h + 16; ++l) {
          const bool high = (hmask[l] >> j) & 1;
          y[l] = dl * static_cast<float>(two_bits(qs, j, l) - (high ? 0 : 4));
        }
      }
      return;
    }
    case dsk::WType::q4_k:
    case dsk::WType::q5_k: {  // d, dmin, scales[12], (Q5_K: qh[32],) qs[128]; low nibbles first
      const bool five = t == dsk::WType::q5_k;
      unsigned char sc[12], q[32], qh[32];
      memcpy(sc, b + 4, 12);
      memcpy(q, b + (five ? 48 : 16) + 32 * (j / 2), 32);
      if (five) memcpy(qh, b + 16, 32);
      int s, m;
      scale_min_k4(j, sc, s, m);
      const float dl = half_at(b) * static_cast<float>(s), ml = half_at(b + 2) * static_cast<float>(m);
      const int shift = 4 * (j % 2);  // low nibbles first
      for (int l = 0; l < 32; ++l) {
        int v = (q[l] >> shift) & 0xF;
        if (five) v += ((qh[l] >> j) & 1) << 4;
        y[l] = __fadd_rn(__fmul_rn(dl, static_cast<float>(v)), -ml);
      }
      return;
    }
    case dsk::WType::q6_k: {  // ql[128], qh[64], scales[16] (int8), d
      const int n = j / 4, quarter = j % 4;
      unsigned char ql[32], qh[32];
      signed char sc[2];
      memcpy(ql, b + 64 * n + (quarter % 2) * 32, 32);
      memcpy(qh, b + 128 + 32 * n, 32);
      memcpy(sc, b + 192 + 8 * n + 2 * quarter, 2);
      const float d = half_at(b + 208);
      const int shift = quarter < 2 ? 0 : 4;
      for (int h = 0; h < 2; ++h) {  // two sub-blocks of 16, each with its scale
        const float s = d * static_cast<float>(sc[h]);
        for (int l = 16 * h; l < 16 * h + 16; ++l) {
          const int q = (((ql[l] >> shift) & 0xF) | ((qh[l] >> (2 * quarter)) & 3) << 4) - 32;
          y[l] = s * static_cast<float>(q);
        }
      }
      return;
    }
    default: {  // iq4_xs: d, scales_h (u16), scales_l[4], qs[128]; sub-blocks of 32 like IQ4_NL
      unsigned char s[4], qs[16];
      unsigned short scales_h;
      memcpy(&scales_h, b + 2, 2);
      memcpy(s, b + 4, 4);
      memcpy(qs, b + 8 + 16 * j, 16);
      const int ls = ((s[j / 2] >> (4 * (j % 2))) & 0xF) | (((scales_h >> (2 * j)) & 3) << 4);
      const float dl = half_at(b) * static_cast<float>(ls - 32);
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * iq4_level(qs[l] & 0xF);
        y[l + 16] = dl * iq4_level(qs[l] >> 4);
      }
      return;
    }
  }
}

// Elements [32 chunk, 32 chunk + 32) of the row `w` points at, decoded.
__device__ inline void decode_chunk32(QRows w, int chunk, float* y) {
  const dsk::QuantBlock q = dsk::quant_block(w.type);
  const int per_block = q.elems / 32;
  const unsigned char* blk = w.p + static_cast<std::size_t>(chunk / per_block) * q.bytes;
  if (per_block == 1)
    decode_block32(w.type, blk, y);
  else
    decode_chunk256(w.type, blk, chunk % per_block, y);
}

// One element of a quantized row (the embedding lookup's per-element read).
__device__ inline float to_f_at(QRows w, std::size_t c) {
  float y[32];
  decode_chunk32(w, static_cast<int>(c / 32), y);
  return y[c % 32];
}
template <class W>
__device__ inline float to_f_at(const W* w, std::size_t c) {
  return to_f(w[c]);
}

// lane_dots for a quantized row: lane i takes chunks i, i + 32, ..., each decoded once for all nt
// tokens; a chunk's 32 products are summed, then added to the token's partial, whatever nt is.
__device__ inline void lane_dots(QRows w, const float* xs, int nt, int cols, int lane, float* acc) {
  for (int p = 0; p < nt; ++p) acc[p] = 0.0f;
  for (int c = 32 * lane; c < cols; c += 32 * 32) {
    float wf[32];
    decode_chunk32(w, c / 32, wf);
    for (int p = 0; p < nt; ++p) {
      float xv[32];
      memcpy(xv, xs + p * cols + c, sizeof xv);  // one hooked access in a CHECKED build, as lane_dots
      float s = 0.0f;
      for (int i = 0; i < 32; ++i) s += wf[i] * xv[i];
      acc[p] += s;
    }
  }
}

__device__ inline float warp_dot(QRows w, const float* xs, int cols, int lane) {
  float acc = 0.0f;
  lane_dots(w, xs, 1, cols, lane, &acc);
  return warp_sum(acc);
}

}  // namespace DSK_NS
