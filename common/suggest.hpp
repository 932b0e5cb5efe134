#pragma once
// "did you mean": the closest of a list of names to a misspelt one.
#include <string>
#include <vector>

namespace sixfold {

// Edit distance (insertions, deletions, substitutions, adjacent transpositions).
std::size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `name` when it is close enough to be a typo (at most a third of its
// length, at least 1 and at most 3 edits); "" otherwise.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);
// " (did you mean 'X'?)" or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace sixfold
