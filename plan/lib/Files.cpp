//===- Files.cpp - file-system operations every layer may use -------------===//
#include "swift/Plan/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

namespace swift::plan {

namespace {
// nftw's callback has no user argument; a thread's removal is its own.
thread_local std::string *tFirstError = nullptr;

int removeEntry(const char *path, const struct stat *, int type, struct FTW *) {
  // Children first (FTW_DEPTH): a directory is empty by the time it comes.
  const int rc = type == FTW_DP ? ::rmdir(path) : ::unlink(path);
  if (rc != 0 && errno != ENOENT && tFirstError && tFirstError->empty())
    *tFirstError = std::string(path) + ": " + std::strerror(errno);
  return 0; // go on: remove what can be removed
}
} // namespace

std::string removeTree(const std::string &path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "" : path + ": " + std::strerror(errno);
  std::string error;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      error = path + ": " + std::strerror(errno);
    return error;
  }
  tFirstError = &error;
  // FTW_PHYS: links are entries, never followed; FTW_DEPTH: post-order.
  if (::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS) != 0 &&
      error.empty())
    error = path + ": " + std::strerror(errno);
  tFirstError = nullptr;
  return error;
}

} // namespace swift::plan
