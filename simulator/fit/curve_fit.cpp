#include "simulator/fit/curve_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <set>

#include "common/error.hpp"
#include "simulator/collective_cost.hpp"

namespace sixfold {

namespace {

double wave_factor(int sm_count, int tile, Count m, Count n, Count batch) {
  if (sm_count <= 0 || tile <= 0) return 1.0;
  const double tiles = std::ceil(double(m) / tile) * std::ceil(double(n) / tile) * double(batch);
  const double waves = std::ceil(tiles / sm_count);
  return tiles / (waves * sm_count);
}

// Sum over the three dimensions of log s(x) = log(x / (x + half)), and its derivative in log(half).
double log_shape(const GemmPoint& p, double half, double* d_log_half = nullptr) {
  double sum = 0, deriv = 0;
  for (Count x : {p.m, p.n, p.k}) {
    sum += std::log(double(x) / (double(x) + half));
    deriv -= half / (double(x) + half);
  }
  if (d_log_half) *d_log_half = deriv;
  return sum;
}

struct GemmTileFit {
  double log_max = 0, log_half = 0, sq_error = 0;
};

// For a fixed half_dim the best log(max) is the mean residual, so the fit is a search over one
// variable: a log-spaced scan (the error need not be convex in half), a golden-section refinement
// around the best grid point, then Gauss-Newton steps on both parameters (Eigen) to polish.
GemmTileFit fit_one_tile(const std::vector<GemmPoint>& points, const std::vector<double>& y) {
  const double n = double(points.size());
  auto profile = [&](double log_half, double* log_max) {
    const double half = std::exp(log_half);
    double mean = 0;
    for (size_t i = 0; i < points.size(); ++i) mean += y[i] - log_shape(points[i], half);
    mean /= n;
    double err = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      const double r = y[i] - mean - log_shape(points[i], half);
      err += r * r;
    }
    if (log_max) *log_max = mean;
    return err;
  };
  const double lo = std::log(1e-3), hi = std::log(1e6);
  const int grid = 400;
  double best_x = lo, best_err = 1e300;
  for (int i = 0; i <= grid; ++i) {
    const double x = lo + (hi - lo) * i / grid;
    const double e = profile(x, nullptr);
    if (e < best_err) best_err = e, best_x = x;
  }
  const double step = (hi - lo) / grid;
  double a = std::max(lo, best_x - step), b = std::min(hi, best_x + step);
  const double golden = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 100; ++it) {
    const double c = b - golden * (b - a), d = a + golden * (b - a);
    if (profile(c, nullptr) < profile(d, nullptr)) b = d;
    else a = c;
  }
  GemmTileFit fit;
  fit.log_half = (a + b) / 2;
  fit.sq_error = profile(fit.log_half, &fit.log_max);
  // Gauss-Newton on (log max, log half); keep a step only when it lowers the error.
  for (int it = 0; it < 20; ++it) {
    Eigen::MatrixXd jac(points.size(), 2);
    Eigen::VectorXd res(points.size());
    const double half = std::exp(fit.log_half);
    for (size_t i = 0; i < points.size(); ++i) {
      double deriv = 0;
      res(i) = y[i] - fit.log_max - log_shape(points[i], half, &deriv);
      jac(i, 0) = 1.0;
      jac(i, 1) = deriv;
    }
    const Eigen::Vector2d delta = jac.colPivHouseholderQr().solve(res);
    GemmTileFit next = fit;
    next.log_max += delta(0);
    next.log_half = std::clamp(fit.log_half + delta(1), lo, hi);
    double err = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      const double r = y[i] - next.log_max - log_shape(points[i], std::exp(next.log_half));
      err += r * r;
    }
    if (!(err < fit.sq_error)) break;
    next.sq_error = err;
    fit = next;
  }
  return fit;
}

}  // namespace

double gemm_curve_efficiency(const GemmEfficiency& curve, int sm_count, Count m, Count n, Count k, Count batch) {
  auto s = [&](Count x) { return double(x) / (double(x) + curve.half_dim); };
  return curve.max_efficiency * s(m) * s(n) * s(k) * wave_factor(sm_count, curve.tile, m, n, batch);
}

GemmFitResult fit_gemm_efficiency(const std::vector<GemmPoint>& points, int sm_count, const std::vector<int>& tiles) {
  if (points.size() < 2) throw Error("GEMM efficiency fit needs at least 2 measured shapes, got " + std::to_string(points.size()));
  if (tiles.empty()) throw Error("GEMM efficiency fit: no tile sizes to try");
  for (const auto& p : points)
    if (!(p.efficiency > 0) || p.m <= 0 || p.n <= 0 || p.k <= 0 || p.batch <= 0)
      throw Error("GEMM efficiency fit: point (" + std::to_string(p.m) + ", " + std::to_string(p.n) + ", " +
                  std::to_string(p.k) + ") has a non-positive shape or efficiency");
  GemmFitResult best;
  double best_err = 1e300;
  const std::vector<int> tried = sm_count > 0 ? tiles : std::vector<int>{tiles.front()};
  for (int tile : tried) {
    std::vector<double> y;
    for (const auto& p : points) y.push_back(std::log(p.efficiency / wave_factor(sm_count, tile, p.m, p.n, p.batch)));
    const GemmTileFit fit = fit_one_tile(points, y);
    if (fit.sq_error < best_err - 1e-12) {
      best_err = fit.sq_error;
      best.curve.tile = tile;
      best.curve.half_dim = std::exp(fit.log_half);
      // The loader requires max_efficiency in (0, 1]; a fit above 1 means the peak given was too low.
      best.curve.max_efficiency = std::min(1.0, std::exp(fit.log_max));
    }
  }
  best.points = int(points.size());
  double sq = 0;
  for (const auto& p : points) {
    const double r = std::log(gemm_curve_efficiency(best.curve, sm_count, p.m, p.n, p.k, p.batch) / p.efficiency);
    sq += r * r;
  }
  best.rms_log_error = std::sqrt(sq / double(points.size()));
  return best;
}

Seconds collective_curve_time(const CollectiveCurve& curve, const CollectivePoint& p) {
  const double factor = bus_factor(p.collective, p.ranks);
  const double busbw = curve.peak_busbw * p.message / (p.message + curve.half_size);
  return curve.latency + factor * p.message / busbw;
}

CollectiveFitResult fit_collective_curve(const std::vector<CollectivePoint>& points, Seconds prior_latency) {
  if (points.size() < 2)
    throw Error("collective curve fit needs at least 2 measured messages, got " + std::to_string(points.size()));
  std::set<double> factors;
  for (const auto& p : points) {
    if (!(p.message > 0) || !(p.time > 0) || p.ranks < 2)
      throw Error("collective curve fit: a point has a non-positive size or time, or fewer than 2 ranks");
    factors.insert(std::round(bus_factor(p.collective, p.ranks) * 1e9) / 1e9);
  }
  CollectiveFitResult out;
  out.points = int(points.size());
  out.latency_fitted = factors.size() >= 2;
  // Unknowns: [latency,] u = half / peak, d = 1 / peak; t = latency + f u + f size d.
  const int cols = out.latency_fitted ? 3 : 2;
  Eigen::MatrixXd a(points.size(), cols);
  Eigen::VectorXd b(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const double f = bus_factor(p.collective, p.ranks), w = 1.0 / p.time;  // relative error
    int c = 0;
    if (out.latency_fitted) a(i, c++) = w;
    a(i, c++) = w * f;
    a(i, c++) = w * f * p.message;
    b(i) = w * (p.time - (out.latency_fitted ? 0.0 : prior_latency));
  }
  const Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
  const double latency = out.latency_fitted ? x(0) : prior_latency;
  const double u = x(cols - 2), d = x(cols - 1);
  if (!(d > 0)) throw Error("collective curve fit: the measured times do not grow with message size (no bandwidth to fit)");
  out.curve.peak_busbw = 1.0 / d;
  // Negative parts mean the points sit below the model's floor; clamp to the loader's bounds.
  out.curve.half_size = std::max(0.0, u / d);
  out.curve.latency = std::max(0.0, latency);
  double sq = 0;
  for (const auto& p : points) {
    const double r = std::log(collective_curve_time(out.curve, p) / p.time);
    sq += r * r;
  }
  out.rms_log_error = std::sqrt(sq / double(points.size()));
  return out;
}

}  // namespace sixfold
