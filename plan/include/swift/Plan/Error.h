//===- Error.h - the two kinds of failure -------------------------------===//
//
// Kept apart on purpose, in every layer that reads user input or runs work:
//  - SWIFT_CHECK(cond, msg...): the *user's* input (plan, flags, data file) is
//    wrong. Throws swift::plan::UserError; a tool prints its one line and
//    exits 2.
//  - SWIFT_ASSERT (and the runtime's SWIFT_CUDA_CHECK / SWIFT_NCCL_CHECK):
//    the system or this code is wrong. Throws swift::plan::RuntimeFailure
//    naming file:line and the condition; a tool prints it and exits 1.
// Neither ever aborts or dumps a stack: ranks must exit with a status the
// launcher can report.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace swift::plan {

/// Bad input from the user: plan file, command line, data file.
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A failed system call, collective, or broken internal invariant.
struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Args> std::string concat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
} // namespace detail

} // namespace swift::plan

#define SWIFT_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::swift::plan::UserError(                                          \
          ::swift::plan::detail::concat(__VA_ARGS__));                         \
  } while (0)

#define SWIFT_ASSERT(cond, ...)                                                \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::swift::plan::RuntimeFailure(::swift::plan::detail::concat(       \
          __FILE__, ":", __LINE__, ": internal error: ", #cond, ": ",          \
          ##__VA_ARGS__));                                                     \
  } while (0)
