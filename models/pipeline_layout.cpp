#include "models/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

#include "common/error.hpp"
#include "common/parse.hpp"

namespace sixfold {

namespace {

// Expands repetitions into a flat run of symbols ("E", "t", "m", "L", "|"), recursively over
// parenthesised groups. The expansion is capped so that a typo like "t*99999999" is an error, not
// an allocation.
class Expander {
 public:
  Expander(const std::string& text, const std::string& where) : text_(text), where_(where) {}

  std::string run() {
    std::string out = sequence();
    if (at_ < text_.size()) fail("')' without a matching '('");
    return out;
  }

 private:
  static constexpr size_t kMaxSymbols = size_t(limits::kLayers) * 4;
  static constexpr int kMaxDepth = 16;

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(where_ + ": '" + text_ + "' at character " + std::to_string(at_ + 1) + ": " + what +
                     " (a Megatron pipeline layout: stages split by '|', 'E' embedding, 't' transformer layer, "
                     "'m' MTP layer, 'L' loss, 'X*n' and '(...)*n' repeat, e.g. \"Et*3|(tt|)*29,m|L\")");
  }

  void skip_cosmetic() {
    while (at_ < text_.size() && (text_[at_] == ',' || std::isspace((unsigned char)text_[at_]))) ++at_;
  }

  // A repetition count after '*': a positive integer.
  long long count() {
    skip_cosmetic();
    const size_t start = at_;
    while (at_ < text_.size() && std::isdigit((unsigned char)text_[at_])) ++at_;
    if (at_ == start) fail("'*' needs a count");
    const std::string digits = text_.substr(start, at_ - start);
    if (digits.size() > 9) fail("repetition count " + digits + " too large");
    const long long n = std::stoll(digits);
    if (n < 1) fail("repetition count must be at least 1");
    return n;
  }

  std::string repeat(const std::string& unit) {
    skip_cosmetic();
    if (at_ >= text_.size() || text_[at_] != '*') return unit;
    ++at_;
    const long long n = count();
    if (unit.empty()) return unit;
    if (double(unit.size()) * double(n) > double(kMaxSymbols)) fail("the layout expands to too many symbols");
    std::string out;
    out.reserve(unit.size() * size_t(n));
    for (long long i = 0; i < n; ++i) out += unit;
    return out;
  }

  std::string sequence() {
    std::string out;
    while (true) {
      skip_cosmetic();
      if (at_ >= text_.size() || text_[at_] == ')') return out;
      const char c = text_[at_];
      std::string unit;
      if (c == '(') {
        if (++depth_ > kMaxDepth) fail("parentheses nested deeper than " + std::to_string(kMaxDepth));
        ++at_;
        unit = sequence();
        --depth_;
        if (at_ >= text_.size()) fail("'(' without a matching ')'");
        ++at_;  // ')'
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        unit = std::string(1, c);
        ++at_;
      } else {
        fail(std::string("'") + c + "' is not a layout symbol (allowed: E, t, m, L, |, *, parentheses, commas)");
      }
      out += repeat(unit);
      if (out.size() > kMaxSymbols) fail("the layout expands to too many symbols");
    }
  }

  const std::string& text_;
  const std::string& where_;
  size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<PipelineStagePart> parse_pipeline_layout(const std::string& text, const std::string& where) {
  const std::string flat = Expander(text, where).run();
  std::vector<PipelineStagePart> stages(1);
  for (char c : flat) {
    PipelineStagePart& s = stages.back();
    switch (c) {
      case '|': stages.emplace_back(); break;
      case 't': ++s.layers; break;
      case 'm': ++s.mtp; break;
      case 'E':
        if (s.embedding) throw UsageError(where + ": '" + text + "': a stage lists the embedding 'E' twice");
        s.embedding = true;
        break;
      case 'L':
        if (s.loss) throw UsageError(where + ": '" + text + "': a stage lists the loss 'L' twice");
        s.loss = true;
        break;
    }
  }
  // A trailing '|' closes the last stage rather than opening an empty one ("(tt|)*4" is 4 stages).
  if (stages.size() > 1 && flat.back() == '|') stages.pop_back();
  return stages;
}

std::string format_pipeline_layout(const std::vector<PipelineStagePart>& stages) {
  auto text = [](const PipelineStagePart& s) {
    std::string t = s.embedding ? "E" : "";
    if (s.layers == 1) t += "t";
    else if (s.layers > 1) t += "t*" + std::to_string(s.layers);
    if (s.mtp == 1) t += "m";
    else if (s.mtp > 1) t += "m*" + std::to_string(s.mtp);
    if (s.loss) t += "L";
    return t;
  };
  std::string out;
  bool after_group = false;
  for (size_t i = 0; i < stages.size();) {
    const std::string here = text(stages[i]);
    size_t j = i + 1;
    // A run of equal stages other than the last becomes "(...|)*k", whose closing '|' separates it
    // from the stage after it.
    while (j + 1 < stages.size() && text(stages[j]) == here) ++j;
    if (i > 0) out += after_group ? "," : "|";  // after a group: Megatron's cosmetic comma
    after_group = j - i > 1;
    out += after_group ? "(" + here + "|)*" + std::to_string(j - i) : here;
    i = j;
  }
  return out;
}

std::string front_loaded_pipeline_layout(int layers, int stages) {
  if (layers < 1 || stages < 1) return "";
  const int per = (layers + stages - 1) / stages;
  std::vector<PipelineStagePart> parts(static_cast<size_t>(stages));
  int left = layers;
  for (int s = 0; s < stages; ++s) {
    parts[size_t(s)].layers = std::min(per, left);
    if (parts[size_t(s)].layers == 0 && s < stages - 1) return "";
    left -= parts[size_t(s)].layers;
  }
  parts.front().embedding = true;
  parts.back().loss = true;
  return format_pipeline_layout(parts);
}

}  // namespace sixfold
