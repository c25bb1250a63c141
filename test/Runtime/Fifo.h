//===- Fifo.h - a FIFO where a reader expects a file, for tests -*- C++ -*-===//
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace swift::rt::testing {

/// Makes a FIFO at `path`. A reader under test must refuse it without
/// opening it; should one block in open() instead, the guard opens the
/// FIFO for writing after `seconds` and closes it, so that the reader sees
/// an empty file and the test fails instead of hanging.
class FifoGuard {
public:
  explicit FifoGuard(const std::string &path, double seconds = 3)
      : path_(path) {
    if (::mkfifo(path.c_str(), 0644) != 0)
      throw std::runtime_error("mkfifo " + path);
    thread_ = std::thread([this, seconds] {
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(int64_t(seconds * 1000));
      while (!stop_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      // Succeeds only while a reader waits in open().
      int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0)
        ::close(fd);
    });
  }
  ~FifoGuard() {
    stop_ = true;
    thread_.join();
  }

private:
  std::string path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

} // namespace swift::rt::testing
