//===- Files.h - opening the files users hand to swift-run ----*- C++ -*-===//
//
// Every input file swift-run opens itself (safetensors, token and JSONL
// data) is a regular file: a FIFO would block the rank until a writer came
// (the watchdog then blamed "a peer rank" at world 1), a device would never
// end. Plain C++ (the torch-free SwiftFormats library).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace swift::data {

/// Opens `path` for reading (O_CLOEXEC) if it is a regular file, else a
/// UserError "path: why" (plan::notRegularFile's why: "is a FIFO, not a
/// regular file; expected <expected>"). Checked before opening, and again
/// on the open descriptor (opened O_NONBLOCK, so a FIFO swapped in between
/// cannot block either). The caller owns the descriptor.
int openRegularFile(const std::string &path, const std::string &expected);

} // namespace swift::data
