//===- Files.h - file-system operations every layer may use ------*- C++ -*-===//
//
// Plain POSIX where std::filesystem is unsafe in a LibTorch binary. The
// torch wheels link libstdc++'s filesystem code statically and export it
// (pytorch/pytorch#133437), and an executable linked with libtorch binds
// its std::filesystem calls to that copy. torch 2.11's
// std::filesystem::remove_all(path, error_code&) jumps through a null
// pointer on any directory with entries. That was swift-run's SIGSEGV on
// the GPU machine, when it removed --data-cache off's temporary tokens.
// scripts/check_layers.py bans remove_all from the tree. The runtime's
// binaries also name libstdc++ before LibTorch (runtime/CMakeLists.txt), so
// that the other std::filesystem calls bind to the system's copy.
//
//===----------------------------------------------------------------------===//
#ifndef SWIFT_PLAN_FILES_H
#define SWIFT_PLAN_FILES_H

#include <string>

namespace swift::plan {

/// Removes `path` and, for a directory, everything under it, without
/// following symlinks (a link is removed, not its target). A path that
/// does not exist is no error. Returns "" on success, else why the first
/// entry that could not be removed was not ("DIR/x: Permission denied");
/// what could be removed is gone either way.
std::string removeTree(const std::string &path);

} // namespace swift::plan

#endif // SWIFT_PLAN_FILES_H
