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

// "tp_comm +0.412 s (+38%)"-style explanation of b against a, from their time breakdowns.
std::string explain_difference(const PlanRequest& request, const Layout& winner, const Layout& loser);

}  // namespace sixfold
