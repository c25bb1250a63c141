//===- FuzzJob.cpp - libFuzzer target: the job reader (YAML and --set) ----===//
//
// Input: a job file's text, optionally followed by a line "#--set" and one
// `--set` override per line after it. loadJob must return a job or one
// diagnostic; any other exception, crash, hang, leak or sanitizer report is
// a finding (scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//
#include "FuzzFile.h"

#include "swift/Job/Job.h"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> overrides;
  const std::string marker = "\n#--set\n";
  if (size_t at = text.find(marker); at != std::string::npos) {
    std::string rest = text.substr(at + marker.size());
    text.resize(at + 1);
    size_t begin = 0;
    while (begin < rest.size()) {
      size_t end = rest.find('\n', begin);
      if (end == std::string::npos)
        end = rest.size();
      overrides.push_back(rest.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  const std::string &path = swift::fuzz::writeInput(text, "job.yaml");
  swift::job::Diagnostic error;
  auto job = swift::job::loadJob(path, overrides, error);
  if (!job && error.message.empty())
    __builtin_trap(); // a refusal must say why
  return 0;
}
