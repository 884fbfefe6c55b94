// Status and StatusOr: errors as values across the library's API.
//
// The library never throws across its interface and never prints. A failing
// call returns a Status whose message names the file, the field and what was
// expected; the CLI turns it into one line on stderr and an exit code.
#ifndef DPLACE_UTIL_STATUS_H_
#define DPLACE_UTIL_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace dplace {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // Bad input: malformed file, unknown name, bad value.
  kNotFound,         // A named thing (file, preset, device) does not exist.
  kInfeasible,       // No placement that fits (memory, device kinds).
  kInternal,         // A broken invariant inside dplace.
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a status with the same code and `prefix + ": " + message`, for
  // adding context (a file name, a JSON path) as an error travels up.
  Status WithPrefix(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + ": " + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFoundError(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status InfeasibleError(std::string message) {
  return Status(StatusCode::kInfeasible, std::move(message));
}
inline Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit.
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit.
    assert(!status_.ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace dplace

// Returns early from the enclosing function when `expr` is an error.
#define DPLACE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::dplace::Status dplace_status_ = (expr);        \
    if (!dplace_status_.ok()) return dplace_status_; \
  } while (0)

#define DPLACE_CONCAT_INNER(a, b) a##b
#define DPLACE_CONCAT(a, b) DPLACE_CONCAT_INNER(a, b)

// `DPLACE_ASSIGN_OR_RETURN(auto x, F());` declares x from F()'s value or
// returns F()'s error.
#define DPLACE_ASSIGN_OR_RETURN(lhs, expr) \
  DPLACE_ASSIGN_OR_RETURN_IMPL(DPLACE_CONCAT(dplace_or_, __LINE__), lhs, expr)
#define DPLACE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#endif  // DPLACE_UTIL_STATUS_H_
