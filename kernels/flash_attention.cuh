#pragma once
// Causal flash attention with grouped-query heads, forward and backward, on bf16 tensor cores
// (WMMA 16x16x16, fp32 accumulation). The algorithm is FlashAttention-2 (Dao 2023): the forward
// streams key tiles through an online softmax (Milakov & Gimelshein 2018) and saves only the
// log-sum-exp per query row; the backward recomputes P = exp(S - lse) per (query tile, key tile),
// accumulates dK, dV of one key tile in registers and adds dQ into fp32 memory with atomics.
//
// Visibility comes from explicit positions (key j visible to query i iff k_pos[j] <= q_pos[i]),
// so the chunks of context parallelism use the same kernel. A tile pair with no visible entry is
// skipped (min k_pos of the key tile > max q_pos of the query tile), which halves the work of an
// ordinary causal sequence.
//
// Layouts: q [tq, heads, D], k/v [tk, kv_heads, D], out/dout like q, lse/delta [heads, tq].
// Tiles: 64 query rows x 64 keys, 4 warps; each warp owns 16 rows of every tile it computes.
#include <mma.h>

#include <climits>

#include "kernels/cuda_common.cuh"

namespace sixfold::cuda {

namespace flash {

namespace wmma = nvcuda::wmma;

constexpr int kRows = 64;     // query rows of a tile
constexpr int kCols = 64;     // keys of a tile
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kPadBf16 = 8;   // row padding (elements) against shared-memory bank conflicts;
constexpr int kPadF32 = 4;    // keeps WMMA's 32-byte alignment and ldm rules (multiple of 8 / 4)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

__host__ __device__ constexpr int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

// Copies `rows` rows of D bf16 (row r at src + r * src_stride) into shared memory with stride
// D + kPadBf16, 16 bytes per thread per step; rows past `valid` are zero.
template <int D>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, long src_stride, int rows, int valid) {
  constexpr int kChunks = D / 8;  // 8 bf16 = 16 bytes
  for (int idx = threadIdx.x; idx < rows * kChunks; idx += blockDim.x) {
    const int r = idx / kChunks, chunk = idx % kChunks;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid) value = *reinterpret_cast<const uint4*>(src + r * src_stride + chunk * 8);
    *reinterpret_cast<uint4*>(dst + r * (D + kPadBf16) + chunk * 8) = value;
  }
}

// ---- shared-memory plans ----
template <int D>
struct ForwardSmem {
  static constexpr int kLdBf16 = D + kPadBf16;
  static constexpr int kLdP = kCols + kPadBf16;
  static constexpr int kLdS = (D > kCols ? D : kCols) + kPadF32;
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + round_up(kRows * kLdBf16 * 2, 128);
  static constexpr int kV = kK + round_up(kCols * kLdBf16 * 2, 128);
  static constexpr int kP = kV + round_up(kCols * kLdBf16 * 2, 128);
  static constexpr int kS = kP + round_up(kRows * kLdP * 2, 128);
  static constexpr int kKpos = kS + round_up(kRows * kLdS * 4, 128);
  static constexpr int kQpos = kKpos + round_up(kCols * 4, 128);
  static constexpr int kBytes = kQpos + round_up(kRows * 4, 128);
};

template <int D>
struct BackwardSmem {
  static constexpr int kLdBf16 = D + kPadBf16;
  static constexpr int kLdP = kCols + kPadBf16;
  static constexpr int kLdS = (D > kCols ? D : kCols) + kPadF32;
  static constexpr int kK = 0;
  static constexpr int kV = kK + round_up(kCols * kLdBf16 * 2, 128);
  static constexpr int kQ = kV + round_up(kCols * kLdBf16 * 2, 128);
  static constexpr int kDO = kQ + round_up(kRows * kLdBf16 * 2, 128);
  static constexpr int kP = kDO + round_up(kRows * kLdBf16 * 2, 128);
  static constexpr int kDS = kP + round_up(kRows * kLdP * 2, 128);
  static constexpr int kS = kDS + round_up(kRows * kLdP * 2, 128);
  static constexpr int kKpos = kS + round_up(kRows * kLdS * 4, 128);
  static constexpr int kQpos = kKpos + round_up(kCols * 4, 128);
  static constexpr int kLse = kQpos + round_up(kRows * 4, 128);
  static constexpr int kDelta = kLse + round_up(kRows * 4, 128);
  static constexpr int kBytes = kDelta + round_up(kRows * 4, 128);
};

// ---- forward ----
// Grid (query tiles, heads). Lane `lane` of warp w owns query row 16w + lane/2 and half of its
// columns (lane & 1): the running max and sum of that row and D/2 output accumulators.
template <int D>
__global__ void __launch_bounds__(kThreads) forward_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* out,
                                                           float* lse, const int* q_pos, const int* k_pos, int tq,
                                                           int tk, int heads, int kv_heads, float scale) {
  using Smem = ForwardSmem<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem + Smem::kQ);
  bf16* sK = reinterpret_cast<bf16*>(smem + Smem::kK);
  bf16* sV = reinterpret_cast<bf16*>(smem + Smem::kV);
  bf16* sP = reinterpret_cast<bf16*>(smem + Smem::kP);
  float* sS = reinterpret_cast<float*>(smem + Smem::kS);
  int* sKpos = reinterpret_cast<int*>(smem + Smem::kKpos);
  int* sQpos = reinterpret_cast<int*>(smem + Smem::kQpos);
  __shared__ int q_pos_max;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int head = blockIdx.y, kv_head = head / (heads / kv_heads);
  const int q0 = blockIdx.x * kRows;
  const int q_valid = min(kRows, tq - q0);

  load_tile<D>(sQ, q + (long(q0) * heads + head) * D, long(heads) * D, kRows, q_valid);
  if (threadIdx.x < kRows) sQpos[threadIdx.x] = threadIdx.x < q_valid ? q_pos[q0 + threadIdx.x] : INT_MIN;
  __syncthreads();
  if (threadIdx.x == 0) {
    int m = INT_MIN;
    for (int r = 0; r < q_valid; ++r) m = max(m, sQpos[r]);
    q_pos_max = m;
  }
  // Q stays in registers as A fragments for the whole key loop.
  FragA q_frag[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    wmma::load_matrix_sync(q_frag[kk], sQ + warp * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
  __syncthreads();

  const int row = lane >> 1, half = lane & 1;
  const int my_q_pos = sQpos[warp * 16 + row];
  const float scale_log2 = scale * kLog2e;  // softmax in base 2: exp(x) = exp2(x * log2 e)
  float row_max = -INFINITY, row_sum = 0.0f;
  float acc[D / 2];
#pragma unroll
  for (int c = 0; c < D / 2; ++c) acc[c] = 0.0f;

  bf16* sP_warp = sP + warp * 16 * Smem::kLdP;
  float* sS_warp = sS + warp * 16 * Smem::kLdS;

  for (int k0 = 0; k0 < tk; k0 += kCols) {
    const int k_valid = min(kCols, tk - k0);
    __syncthreads();  // the previous tile's K, V and positions are no longer read
    if (threadIdx.x < kCols) sKpos[threadIdx.x] = threadIdx.x < k_valid ? k_pos[k0 + threadIdx.x] : INT_MAX;
    const bool visible = threadIdx.x < kCols && sKpos[threadIdx.x] <= q_pos_max;
    if (!__syncthreads_or(visible)) continue;
    load_tile<D>(sK, k + (long(k0) * kv_heads + kv_head) * D, long(kv_heads) * D, kCols, k_valid);
    load_tile<D>(sV, v + (long(k0) * kv_heads + kv_head) * D, long(kv_heads) * D, kCols, k_valid);
    __syncthreads();

    // S = Q K^T for this warp's 16 rows.
#pragma unroll
    for (int nb = 0; nb < kCols / 16; ++nb) {
      FragC s_frag;
      wmma::fill_fragment(s_frag, 0.0f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        FragBT k_frag;
        wmma::load_matrix_sync(k_frag, sK + nb * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
        wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
      }
      wmma::store_matrix_sync(sS_warp + nb * 16, s_frag, Smem::kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax over this lane's 32 columns, combined with the partner lane.
    const float* s_row = sS_warp + row * Smem::kLdS + half * (kCols / 2);
    float tile_max = -INFINITY;
#pragma unroll 8
    for (int c = 0; c < kCols / 2; ++c) {
      const int col = half * (kCols / 2) + c;
      if (sKpos[col] <= my_q_pos) tile_max = fmaxf(tile_max, s_row[c] * scale_log2);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float new_max = fmaxf(row_max, tile_max);
    const float alpha = new_max == -INFINITY ? 1.0f : exp2f(row_max - new_max);
    float tile_sum = 0.0f;
    bf16* p_row = sP_warp + row * Smem::kLdP + half * (kCols / 2);
#pragma unroll 8
    for (int c = 0; c < kCols / 2; ++c) {
      const int col = half * (kCols / 2) + c;
      const float p = sKpos[col] <= my_q_pos ? exp2f(s_row[c] * scale_log2 - new_max) : 0.0f;
      tile_sum += p;
      p_row[c] = to_bf16(p);
    }
    tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);
    row_sum = row_sum * alpha + tile_sum;
    row_max = new_max;
#pragma unroll
    for (int c = 0; c < D / 2; ++c) acc[c] *= alpha;
    __syncwarp();

    // PV for this warp's rows into the (now free) S scratch, then into the accumulators.
#pragma unroll
    for (int nb = 0; nb < D / 16; ++nb) {
      FragC o_frag;
      wmma::fill_fragment(o_frag, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kCols / 16; ++kk) {
        FragA p_frag;
        FragB v_frag;
        wmma::load_matrix_sync(p_frag, sP_warp + kk * 16, Smem::kLdP);
        wmma::load_matrix_sync(v_frag, sV + kk * 16 * Smem::kLdBf16 + nb * 16, Smem::kLdBf16);
        wmma::mma_sync(o_frag, p_frag, v_frag, o_frag);
      }
      wmma::store_matrix_sync(sS_warp + nb * 16, o_frag, Smem::kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    const float* o_row = sS_warp + row * Smem::kLdS + half * (D / 2);
#pragma unroll
    for (int c = 0; c < D / 2; ++c) acc[c] += o_row[c];
  }

  const int q_index = q0 + warp * 16 + row;
  if (q_index < tq) {
    const float inv = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
    bf16* o = out + (long(q_index) * heads + head) * D + half * (D / 2);
#pragma unroll
    for (int c = 0; c < D / 2; ++c) o[c] = to_bf16(acc[c] * inv);
    if (half == 0) lse[long(head) * tq + q_index] = row_sum > 0.0f ? (row_max + log2f(row_sum)) * kLn2 : -INFINITY;
  }
}

// ---- backward ----
// delta[h, i] = sum_c dout[i, h, c] * out[i, h, c]: one warp per (query, head).
template <int D>
__global__ void delta_kernel(const bf16* dout, const bf16* out, float* delta, int tq, int heads) {
  const long warp_id = (blockIdx.x * long(blockDim.x) + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp_id >= long(tq) * heads) return;
  const int i = int(warp_id / heads), h = int(warp_id % heads);
  const long base = (long(i) * heads + h) * D;
  float s = 0.0f;
  for (int c = lane; c < D; c += 32) s += to_float(dout[base + c]) * to_float(out[base + c]);
  s = warp_sum(s);
  if (lane == 0) delta[long(h) * tq + i] = s;
}

// Grid (key tiles, kv heads): a block owns dK, dV of its 64 keys exclusively (it visits every
// query head of its group), so they accumulate in WMMA fragments and are added to memory once.
// Warp w owns keys 16w.. for dK/dV and query rows 16w.. for S, dP, dS and dQ.
template <int D>
__global__ void __launch_bounds__(kThreads) backward_kernel(const bf16* dout, const bf16* q, const bf16* k,
                                                            const bf16* v, const float* lse, const float* delta,
                                                            float* dq, float* dk_accum, float* dv_accum,
                                                            const int* q_pos, const int* k_pos, int tq, int tk,
                                                            int heads, int kv_heads, float scale) {
  using Smem = BackwardSmem<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem + Smem::kK);
  bf16* sV = reinterpret_cast<bf16*>(smem + Smem::kV);
  bf16* sQ = reinterpret_cast<bf16*>(smem + Smem::kQ);
  bf16* sdO = reinterpret_cast<bf16*>(smem + Smem::kDO);
  bf16* sP = reinterpret_cast<bf16*>(smem + Smem::kP);
  bf16* sdS = reinterpret_cast<bf16*>(smem + Smem::kDS);
  float* sS = reinterpret_cast<float*>(smem + Smem::kS);
  int* sKpos = reinterpret_cast<int*>(smem + Smem::kKpos);
  int* sQpos = reinterpret_cast<int*>(smem + Smem::kQpos);
  float* sLse = reinterpret_cast<float*>(smem + Smem::kLse);
  float* sDelta = reinterpret_cast<float*>(smem + Smem::kDelta);
  __shared__ int k_pos_min;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int kv_head = blockIdx.y, group = heads / kv_heads;
  const int k0 = blockIdx.x * kCols;
  const int k_valid = min(kCols, tk - k0);

  load_tile<D>(sK, k + (long(k0) * kv_heads + kv_head) * D, long(kv_heads) * D, kCols, k_valid);
  load_tile<D>(sV, v + (long(k0) * kv_heads + kv_head) * D, long(kv_heads) * D, kCols, k_valid);
  if (threadIdx.x < kCols) sKpos[threadIdx.x] = threadIdx.x < k_valid ? k_pos[k0 + threadIdx.x] : INT_MAX;
  __syncthreads();
  if (threadIdx.x == 0) {
    int m = INT_MAX;
    for (int c = 0; c < k_valid; ++c) m = min(m, sKpos[c]);
    k_pos_min = m;
  }

  FragC dk_frag[D / 16], dv_frag[D / 16];
#pragma unroll
  for (int nb = 0; nb < D / 16; ++nb) {
    wmma::fill_fragment(dk_frag[nb], 0.0f);
    wmma::fill_fragment(dv_frag[nb], 0.0f);
  }
  const float scale_log2 = scale * kLog2e;
  float* sS_warp = sS + warp * 16 * Smem::kLdS;

  for (int g = 0; g < group; ++g) {
    const int head = kv_head * group + g;
    for (int q0 = 0; q0 < tq; q0 += kRows) {
      const int q_valid = min(kRows, tq - q0);
      __syncthreads();  // the previous query tile is no longer read
      bool visible = false;
      if (threadIdx.x < kRows) {
        const bool valid = threadIdx.x < q_valid;
        const int i = q0 + threadIdx.x;
        sQpos[threadIdx.x] = valid ? q_pos[i] : INT_MIN;
        sLse[threadIdx.x] = valid ? lse[long(head) * tq + i] : -INFINITY;
        sDelta[threadIdx.x] = valid ? delta[long(head) * tq + i] : 0.0f;
        visible = valid && sQpos[threadIdx.x] >= k_pos_min && sLse[threadIdx.x] != -INFINITY;
      }
      if (!__syncthreads_or(visible)) continue;
      load_tile<D>(sQ, q + (long(q0) * heads + head) * D, long(heads) * D, kRows, q_valid);
      load_tile<D>(sdO, dout + (long(q0) * heads + head) * D, long(heads) * D, kRows, q_valid);
      __syncthreads();

      // S = Q K^T (this warp's query rows), then P = exp(S * scale - lse), masked.
#pragma unroll
      for (int nb = 0; nb < kCols / 16; ++nb) {
        FragC s_frag;
        wmma::fill_fragment(s_frag, 0.0f);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          FragA q_frag;
          FragBT k_frag;
          wmma::load_matrix_sync(q_frag, sQ + warp * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
          wmma::load_matrix_sync(k_frag, sK + nb * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
          wmma::mma_sync(s_frag, q_frag, k_frag, s_frag);
        }
        wmma::store_matrix_sync(sS_warp + nb * 16, s_frag, Smem::kLdS, wmma::mem_row_major);
      }
      __syncwarp();
      for (int idx = lane; idx < 16 * kCols; idx += 32) {
        const int r = idx / kCols, c = idx % kCols;
        const int qr = warp * 16 + r;
        const float l = sLse[qr];
        const bool on = sKpos[c] <= sQpos[qr] && l != -INFINITY;
        const float p = on ? exp2f(sS_warp[r * Smem::kLdS + c] * scale_log2 - l * kLog2e) : 0.0f;
        sP[qr * Smem::kLdP + c] = to_bf16(p);
      }
      __syncwarp();

      // dP = dO V^T into the same scratch, then dS = P (dP - delta) (scale applied at the end).
#pragma unroll
      for (int nb = 0; nb < kCols / 16; ++nb) {
        FragC dp_frag;
        wmma::fill_fragment(dp_frag, 0.0f);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          FragA do_frag;
          FragBT v_frag;
          wmma::load_matrix_sync(do_frag, sdO + warp * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
          wmma::load_matrix_sync(v_frag, sV + nb * 16 * Smem::kLdBf16 + kk * 16, Smem::kLdBf16);
          wmma::mma_sync(dp_frag, do_frag, v_frag, dp_frag);
        }
        wmma::store_matrix_sync(sS_warp + nb * 16, dp_frag, Smem::kLdS, wmma::mem_row_major);
      }
      __syncwarp();
      for (int idx = lane; idx < 16 * kCols; idx += 32) {
        const int r = idx / kCols, c = idx % kCols;
        const int qr = warp * 16 + r;
        const float p = to_float(sP[qr * Smem::kLdP + c]);
        sdS[qr * Smem::kLdP + c] = to_bf16(p * (sS_warp[r * Smem::kLdS + c] - sDelta[qr]));
      }
      __syncthreads();  // dV and dK read P and dS of all warps

      // dV += P^T dO and dK += dS^T Q for this warp's 16 keys.
#pragma unroll
      for (int nb = 0; nb < D / 16; ++nb) {
#pragma unroll
        for (int kk = 0; kk < kRows / 16; ++kk) {
          FragAT pt_frag, dst_frag;
          FragB do_frag, q_frag;
          wmma::load_matrix_sync(pt_frag, sP + kk * 16 * Smem::kLdP + warp * 16, Smem::kLdP);
          wmma::load_matrix_sync(do_frag, sdO + kk * 16 * Smem::kLdBf16 + nb * 16, Smem::kLdBf16);
          wmma::mma_sync(dv_frag[nb], pt_frag, do_frag, dv_frag[nb]);
          wmma::load_matrix_sync(dst_frag, sdS + kk * 16 * Smem::kLdP + warp * 16, Smem::kLdP);
          wmma::load_matrix_sync(q_frag, sQ + kk * 16 * Smem::kLdBf16 + nb * 16, Smem::kLdBf16);
          wmma::mma_sync(dk_frag[nb], dst_frag, q_frag, dk_frag[nb]);
        }
      }

      // dQ (this warp's query rows) = dS K, added into fp32 memory.
#pragma unroll
      for (int nb = 0; nb < D / 16; ++nb) {
        FragC dq_frag;
        wmma::fill_fragment(dq_frag, 0.0f);
#pragma unroll
        for (int kk = 0; kk < kCols / 16; ++kk) {
          FragA ds_frag;
          FragB k_frag;
          wmma::load_matrix_sync(ds_frag, sdS + warp * 16 * Smem::kLdP + kk * 16, Smem::kLdP);
          wmma::load_matrix_sync(k_frag, sK + kk * 16 * Smem::kLdBf16 + nb * 16, Smem::kLdBf16);
          wmma::mma_sync(dq_frag, ds_frag, k_frag, dq_frag);
        }
        wmma::store_matrix_sync(sS_warp + nb * 16, dq_frag, Smem::kLdS, wmma::mem_row_major);
      }
      __syncwarp();
      for (int idx = lane; idx < 16 * D; idx += 32) {
        const int r = idx / D, c = idx % D;
        const int i = q0 + warp * 16 + r;
        if (i < tq) atomicAdd(&dq[(long(i) * heads + head) * D + c], scale * sS_warp[r * Smem::kLdS + c]);
      }
    }
  }

  // Each warp adds its 16 keys of dK (times scale) and dV into memory; no other block owns them.
  __syncthreads();
  for (int pass = 0; pass < 2; ++pass) {
#pragma unroll
    for (int nb = 0; nb < D / 16; ++nb)
      wmma::store_matrix_sync(sS_warp + nb * 16, pass == 0 ? dk_frag[nb] : dv_frag[nb], Smem::kLdS,
                              wmma::mem_row_major);
    __syncwarp();
    float* target = pass == 0 ? dk_accum : dv_accum;
    const float factor = pass == 0 ? scale : 1.0f;
    for (int idx = lane; idx < 16 * D; idx += 32) {
      const int r = idx / D, c = idx % D;
      const int j = k0 + warp * 16 + r;
      if (j < tk) target[(long(j) * kv_heads + kv_head) * D + c] += factor * sS_warp[r * Smem::kLdS + c];
    }
    __syncwarp();
  }
}

}  // namespace flash

// ---- host launchers ----

template <int D>
void launch_flash_attention_forward(const bf16* q, const bf16* k, const bf16* v, bf16* out, float* lse,
                                    const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads,
                                    float scale, cudaStream_t stream) {
  constexpr int bytes = flash::ForwardSmem<D>::kBytes;
  CHECK_CUDA(cudaFuncSetAttribute(flash::forward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid((tq + flash::kRows - 1) / flash::kRows, heads);
  flash::forward_kernel<D><<<grid, flash::kThreads, bytes, stream>>>(q, k, v, out, lse, q_pos, k_pos, tq, tk, heads,
                                                                     kv_heads, scale);
  CHECK_LAUNCH();
}

template <int D>
void launch_flash_attention_backward(const bf16* dout, const bf16* q, const bf16* k, const bf16* v, const bf16* out,
                                     const float* lse, float* dq, float* dk_accum, float* dv_accum,
                                     const int* q_pos, const int* k_pos, int tq, int tk, int heads, int kv_heads,
                                     float scale, float* delta, cudaStream_t stream) {
  CHECK_CUDA(cudaMemsetAsync(dq, 0, sizeof(float) * std::size_t(tq) * heads * D, stream));
  const long warps = long(tq) * heads;
  flash::delta_kernel<D><<<unsigned((warps * 32 + 255) / 256), 256, 0, stream>>>(dout, out, delta, tq, heads);
  CHECK_LAUNCH();
  if (tk == 0) return;
  constexpr int bytes = flash::BackwardSmem<D>::kBytes;
  CHECK_CUDA(cudaFuncSetAttribute(flash::backward_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  const dim3 grid((tk + flash::kCols - 1) / flash::kCols, kv_heads);
  flash::backward_kernel<D><<<grid, flash::kThreads, bytes, stream>>>(dout, q, k, v, lse, delta, dq, dk_accum,
                                                                      dv_accum, q_pos, k_pos, tq, tk, heads,
                                                                      kv_heads, scale);
  CHECK_LAUNCH();
}

}  // namespace sixfold::cuda
