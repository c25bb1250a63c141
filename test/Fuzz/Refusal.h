//===- Refusal.h - what a reader's refusal must look like -----------------===//
#pragma once

#include <cstdio>
#include <string>

namespace swift::fuzz {

/// A refusal (UserError) says why in one short line: never empty, never the
/// input echoed whole (swift's tools print it as the one error line).
inline void checkRefusal(const char *what) {
  const std::string message = what;
  if (message.empty() || message.find('\n') != std::string::npos ||
      message.size() > 1000) {
    std::fprintf(stderr, "a refusal of %zu bytes, not one short line: %.400s\n",
                 message.size(), message.c_str());
    __builtin_trap();
  }
}

} // namespace swift::fuzz
