//===- FuzzFile.h - the readers under fuzzing take paths ------------------===//
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace swift::fuzz {

/// Writes `text` to this process's scratch file NAME (in $TMPDIR or /tmp;
/// one per process, so parallel fuzzing jobs do not share it) and returns
/// its path.
inline const std::string &writeInput(const std::string &text,
                                     const char *name) {
  static const std::string path = [name] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/swift-fuzz-" +
           std::to_string(getpid()) + "-" + name;
  }();
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

} // namespace swift::fuzz
