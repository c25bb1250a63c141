//===- TestUtil.h - temporary job files for the compiler's tests -*- C++ -*-===//

#ifndef SWIFT_TEST_JOB_TESTUTIL_H
#define SWIFT_TEST_JOB_TESTUTIL_H

#include "swift/Job/Job.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace swift::job::testing {

/// Writes `text` to a file unique to the running test and returns its path.
inline std::string writeTemp(const std::string &text,
                             const std::string &suffix = ".yaml") {
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::temp_directory_path() / "swift-compiler-tests";
  std::filesystem::create_directories(dir);
  auto path = dir / (std::string(info->test_suite_name()) + "." +
                     info->name() + suffix);
  std::ofstream(path) << text;
  return path.string();
}

/// A small valid job that tests modify.
inline const char *kBaseJob = R"(model: llama3.2-1b
training: {sequence_length: 2048, global_batch_size: 8}
cluster: {gpu: h100, gpus_per_node: 8}
)";

} // namespace swift::job::testing

#endif // SWIFT_TEST_JOB_TESTUTIL_H
