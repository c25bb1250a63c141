//===- Files.cpp - opening the files users hand to swift-run --------------===//

#include "swift/Data/Files.h"

#include "swift/Plan/Json.h"
#include "swift/Plan/Error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace swift::data {
using plan::UserError;

int openRegularFile(const std::string &path, const std::string &expected) {
  if (std::string why = plan::notRegularFile(path, expected); !why.empty())
    throw UserError(path + ": " + why);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  SWIFT_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    SWIFT_CHECK(false, path, ": is not a regular file; expected ", expected);
  }
  // Reads from here on may block as on any regular file.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

} // namespace swift::data
