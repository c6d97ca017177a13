// The one error vocabulary of the launcher: a closed error kind, a one-line message and, when the
// error concerns an input file, its file:line:col. Functions that can fail return Result<T>.
// Exceptions never leave the core; the CLI maps ErrorKind to exit codes (docs/exit-codes.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace grpo::core {

// Where in an input file something was found. line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  bool known() const { return !file.empty(); }
  // "file:line:col", "file:line" or "file"; empty when unknown.
  std::string str() const;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

enum class ErrorKind {
  kParse,         // malformed input text (TOML syntax, shell syntax)
  kInvalidValue,  // a value of the right type that is out of range or inconsistent
  kWrongType,     // a value of the wrong type
  kUnknownKey,    // a key the schema does not have
  kMissingKey,    // a required key is absent
  kNotFound,      // a named profile, model, template or file does not exist
  kCycle,         // a cyclic `extends` chain
  kIo,            // reading or writing a file failed
  kNoSpace,       // a write failed for lack of space (ENOSPC, EDQUOT): the file system is full
  kUnavailable,   // an external service (Slurm) cannot be reached
  kRejected,      // an external service refused the request (sbatch error)
  kInfeasible,    // no plan satisfies the constraints
  kInternal,      // a bug: an invariant did not hold
};

std::string_view to_string(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kInternal;
  std::string message;
  SourceLocation where;

  // One line: "file:line:col: message" (or just the message when there is no location).
  std::string str() const;
};

inline Error make_error(ErrorKind kind, std::string message, SourceLocation where = {}) {
  return Error{kind, std::move(message), std::move(where)};
}

// A value or an Error. Deliberately small: value(), error(), ok(), and operator bool.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : data_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return data_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(data_); }
  const T& value() const& { return std::get<0>(data_); }
  T&& value() && { return std::get<0>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Result<void>: success or an Error.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() {
  return Ok{};
}

}  // namespace grpo::core

// Propagates an error from a Result-returning expression; binds the value to `var` otherwise.
#define GRPO_CONCAT_INNER(a, b) a##b
#define GRPO_CONCAT(a, b) GRPO_CONCAT_INNER(a, b)
#define GRPO_TRY_IMPL(tmp, var, expr) \
  auto tmp = (expr);                  \
  if (!tmp.ok()) return tmp.error();  \
  var = std::move(tmp).value()
#define GRPO_TRY(var, expr) GRPO_TRY_IMPL(GRPO_CONCAT(grpo_try_, __LINE__), var, expr)
#define GRPO_TRY_STATUS(expr)                            \
  do {                                                   \
    auto grpo_status_ = (expr);                          \
    if (!grpo_status_.ok()) return grpo_status_.error(); \
  } while (0)
