#pragma once
// Least-squares fits of a hardware profile's curves to measured points: the GEMM efficiency curve
// (simulator/hardware_profile.hpp, GemmEfficiency, priced in simulator/op_cost.cpp) and a collective
// bus-bandwidth curve (CollectiveCurve, priced in simulator/collective_cost.cpp). Used by the GPU
// microbenchmark calibration (executor/cuda_calibration.*) and by the Kineto trace calibration
// (simulator/kineto_trace.*). The fits minimise squared log errors, so a 10% miss on a 5 us kernel
// weighs as much as one on a 5 ms kernel.
#include <vector>

#include "common/units.hpp"
#include "models/step_program.hpp"
#include "simulator/hardware_profile.hpp"

namespace sixfold {

// One measured GEMM: its shape and the fraction of the dtype's peak it reached.
struct GemmPoint {
  Count m = 0, n = 0, k = 0, batch = 1;
  double efficiency = 0;  // achieved FLOP/s / peak FLOP/s
};

struct GemmFitResult {
  GemmEfficiency curve;
  double rms_log_error = 0;
  int points = 0;
};

// The model of op_cost.cpp: eff = max * s(m) s(n) s(k) * waves(tile, sm_count), s(x) = x / (x + half).
// Fits max_efficiency and half_dim for each tile in `tiles` (wave quantisation needs sm_count > 0;
// with sm_count 0 the tile is irrelevant and the first is kept) and keeps the tile with the least
// error. Throws Error with fewer than 2 points or a non-positive efficiency.
GemmFitResult fit_gemm_efficiency(const std::vector<GemmPoint>& points, int sm_count,
                                  const std::vector<int>& tiles = {64, 128, 256});

// The efficiency the curve predicts (the same formula as OpPricer::gemm_efficiency, without its floor).
double gemm_curve_efficiency(const GemmEfficiency& curve, int sm_count, Count m, Count n, Count k, Count batch);

// One measured collective: kind, ranks in the group, message (nccl-tests "size") and time.
struct CollectivePoint {
  Collective collective = Collective::AllReduce;
  int ranks = 2;
  Bytes message = 0;
  Seconds time = 0;
};

struct CollectiveFitResult {
  CollectiveCurve curve;
  double rms_log_error = 0;
  int points = 0;
  bool latency_fitted = false;  // false: the latency was held at the prior given
};

// collective_cost.cpp prices t = latency + f * size / (peak * size / (size + half)) with f the
// nccl-tests bus factor, i.e. t = latency + f * half / peak + f * size / peak: linear in
// (latency, half / peak, 1 / peak). With one bus factor among the points, latency and half are not
// separable (only latency + f half / peak is), so the latency is held at `prior_latency` and half
// and peak are fitted; with two or more factors (group sizes or kinds) all three are fitted.
// Weighted linear least squares (Eigen) on relative error. Throws Error with fewer than 2 points,
// and when the fit gives a non-positive bandwidth (points that grow no slower than latency).
CollectiveFitResult fit_collective_curve(const std::vector<CollectivePoint>& points, Seconds prior_latency);

// Time the curve predicts for a point (collective_cost.cpp's formula on one placement level).
Seconds collective_curve_time(const CollectiveCurve& curve, const CollectivePoint& point);

}  // namespace sixfold
