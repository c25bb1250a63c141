//===- Files.h - file-system operations every layer may use ------*- C++ -*-===//
//
// Plain POSIX, not std::filesystem, where a LibTorch binary must not bind
// to std::filesystem: the torch wheels' libtorch.so exports its own copy of
// libstdc++'s filesystem functions, and an executable that links it calls
// that copy. torch 2.11's std::filesystem::remove_all(path, error_code&)
// jumps through a null pointer on any directory with entries (swift-run on
// the GPU machine: SIGSEGV removing --data-cache off's temporary tokens).
// scripts/check_sources.py keeps remove_all out of the tree.
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
