#include "common/suggest.hpp"

#include <algorithm>

namespace sixfold {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance; names are short, so the full table is fine.
  const std::size_t n = a.size(), m = b.size();
  if (n > 256 || m > 256) return std::max(n, m);
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const std::size_t allowed = std::clamp<std::size_t>(name.size() / 3, 1, 3);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(name, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace sixfold
