//===- Check.h - error reporting for swift-run ----------------------------===//
//
// Two kinds of failure, kept apart on purpose:
//  - SWIFT_CHECK(cond, msg...): the *user's* input (plan, flags, data file) is
//    wrong. Throws swift::rt::UserError; main() prints its one line and
//    exits 2.
//  - SWIFT_CUDA_CHECK / SWIFT_NCCL_CHECK / SWIFT_ASSERT: the system or this
//    code is wrong. Throws swift::rt::RuntimeFailure naming file:line and the
//    call; main() prints it and exits 1.
// Neither ever aborts or dumps a stack: ranks must exit with a status the
// launcher can report.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace swift::rt {

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

} // namespace swift::rt

#define SWIFT_CHECK(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::swift::rt::UserError(::swift::rt::detail::concat(__VA_ARGS__));  \
  } while (0)

#define SWIFT_ASSERT(cond, ...)                                                \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::swift::rt::RuntimeFailure(::swift::rt::detail::concat(           \
          __FILE__, ":", __LINE__, ": internal error: ", #cond, ": ",          \
          ##__VA_ARGS__));                                                     \
  } while (0)

#define SWIFT_CUDA_CHECK(call)                                                 \
  do {                                                                         \
    cudaError_t swiftErr_ = (call);                                            \
    if (swiftErr_ != cudaSuccess)                                              \
      throw ::swift::rt::RuntimeFailure(::swift::rt::detail::concat(           \
          __FILE__, ":", __LINE__, ": ", #call,                                \
          " failed: ", cudaGetErrorString(swiftErr_)));                        \
  } while (0)

#define SWIFT_NCCL_CHECK(call)                                                 \
  do {                                                                         \
    ncclResult_t swiftRes_ = (call);                                           \
    if (swiftRes_ != ncclSuccess)                                              \
      throw ::swift::rt::RuntimeFailure(::swift::rt::detail::concat(           \
          __FILE__, ":", __LINE__, ": ", #call,                                \
          " failed: ", ncclGetErrorString(swiftRes_)));                        \
  } while (0)
