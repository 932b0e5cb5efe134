#pragma once
// Why the recommended layout beats the best layout of each other family (no PP, no TP, ZeRO-3
// instead of PP, more CP, ...): the step-time difference and the time component that grew most.
#include <optional>
#include <string>
#include <vector>

#include "planner/planner.hpp"

namespace sixfold {

struct FamilyVerdict {
  std::string family;
  std::optional<Candidate> best;  // none: no layout of the family fits the budget
  std::string why;
};

std::vector<FamilyVerdict> compare_families(const PlanRequest& request, const PlanResult& result,
                                            const Candidate& recommended);

// Step times closer than this are a tie at the precision sixfold prints (and far inside its
// error band): neither is called the winner.
inline constexpr double kTie = 0.001;

// "step +4.1%: tp_comm +0.412 s (+38%)"-style explanation of `loser` against `winner`, from
// their time breakdowns; `step_ratio` (loser / winner) from the predictor that ranked them,
// else the closed form's. "a tie" when they are within kTie.
std::string explain_difference(const PlanRequest& request, const Layout& winner, const Layout& loser,
                               std::optional<double> step_ratio = std::nullopt);

}  // namespace sixfold
