#pragma once
// Errors are exceptions with context; the CLI catches them once and prints one clear line.
// UsageError (bad flags, impossible layouts asked for by the user) exits 2; Error exits 1.
#include <stdexcept>
#include <string>

namespace sixfold {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user asked for something that cannot be: a bad flag value, an unknown name, a layout
// that violates a constraint. Exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A layout that violates a named constraint (e.g. "tp divides heads"); `subject` names what broke
// it where that is not the layout ("workload": --compile under Megatron, whatever the layout).
class LayoutError : public UsageError {
 public:
  LayoutError(const std::string& constraint, const std::string& detail, const std::string& subject = "layout")
      : UsageError(subject + " violates '" + constraint + "': " + detail),
        constraint_(constraint),
        detail_(detail),
        subject_(subject) {}
  const std::string& constraint() const { return constraint_; }
  const std::string& detail() const { return detail_; }
  const std::string& subject() const { return subject_; }

 private:
  std::string constraint_, detail_, subject_;
};

}  // namespace sixfold
