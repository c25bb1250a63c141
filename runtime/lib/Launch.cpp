//===- Launch.cpp - local launcher, env parsing, watchdog -----------------===//
#include "swift/Runtime/Launch.h"
#include "swift/Runtime/Check.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <mutex>
#include <thread>

namespace swift::rt {
namespace {

const char *firstEnv(std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (const char *v = std::getenv(n))
      return v;
  return nullptr;
}

int envInt(std::initializer_list<const char *> names, int fallback, int lo,
           int hi) {
  for (const char *n : names) {
    const char *v = std::getenv(n);
    if (!v)
      continue;
    char *end = nullptr;
    long x = std::strtol(v, &end, 10);
    SWIFT_CHECK(end != v && *end == '\0' && x >= lo && x <= hi,
                "environment: ", n, "=\"", v, "\" is not an integer in [", lo,
                ", ", hi, "]");
    return int(x);
  }
  return fallback;
}

/// The fatal-error file of rank r under the launcher's error directory.
std::string errorFile(const std::string &dir, int r) {
  return dir + "/rank-" + std::to_string(r);
}

volatile sig_atomic_t gStopRequested = 0;
void onStopSignal(int) { gStopRequested = 1; }

std::string describeStatus(int status) {
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") +
           std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

/// The launcher's one line (or lines) for a failed rank: its own message,
/// each line prefixed "swift-run: " with the rank named on the first, or
/// what ended it when it left none (a signal, an exit without a message).
std::string failureReport(const std::string &dir, int r, int status,
                          int world) {
  std::ifstream in(errorFile(dir, r));
  std::stringstream text;
  text << in.rdbuf();
  std::string message = text.str();
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  const std::string rank = "rank " + std::to_string(r) + " of " +
                           std::to_string(world);
  if (message.empty())
    return "swift-run: error: " + rank + " " + describeStatus(status) +
           "; the others were stopped";
  const std::string where = " (" + rank + "; the others were stopped)";
  std::string out;
  std::istringstream lines(message);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    out += "swift-run: " + line + (first ? where : "") + "\n";
    first = false;
  }
  out.pop_back();
  return out;
}

} // namespace

RankEnv readRankEnv() {
  RankEnv e;
  e.world = envInt({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"}, 1, 1,
                   1 << 20);
  e.rank = envInt({"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}, 0, 0,
                  e.world - 1);
  e.localRank =
      envInt({"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}, 0,
             0, 1 << 16);
  e.localWorld = envInt({"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                        e.world, 1, 1 << 16);
  if (const char *a = firstEnv({"MASTER_ADDR"}))
    e.masterAddr = a;
  e.masterPort = envInt({"MASTER_PORT"}, 29500, 1, 65535);
  const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const char *hosted = std::getenv("SWIFT_STORE_HOSTED");
  bool external = (agent && std::string(agent) == "True") ||
                  (hosted && std::string(hosted) == "1");
  e.hostStore = e.rank == 0 && !external;
  return e;
}

int launchLocalRanks(int nproc, const std::vector<std::string> &childArgs) {
  // The launcher hosts the store, so no rank races another for the port and
  // the store outlives any rank that dies.
  c10d::TCPStoreOptions opts;
  opts.port = 0;
  opts.isServer = true;
  opts.waitWorkers = false;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
  const std::string port = std::to_string(store->getPort());
  // Where ranks leave their fatal errors (reportFatal), removed on return.
  std::string errorDir =
      (std::filesystem::temp_directory_path() / "swift-run-XXXXXX").string();
  SWIFT_CHECK(mkdtemp(errorDir.data()) != nullptr,
              "cannot create a temporary directory: ", std::strerror(errno));
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } removeErrorDir{errorDir};

  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<pid_t> pids(nproc, -1);
  const pid_t parent = getpid();
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    SWIFT_CHECK(pid >= 0, "fork failed: ", std::strerror(errno));
    if (pid == 0) {
      // If the launcher dies, take the rank down with it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent)
        _exit(1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      setenv("SWIFT_STORE_HOSTED", "1", 1);
      setenv("SWIFT_ERROR_DIR", errorDir.c_str(), 1);
      std::vector<char *> argv;
      for (const std::string &a : childArgs)
        argv.push_back(const_cast<char *>(a.c_str()));
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "swift-run: exec failed: %s\n",
                   std::strerror(errno));
      _exit(1);
    }
    pids[r] = pid;
  }

  int alive = nproc, exitCode = 0, firstFailed = -1, firstStatus = 0;
  bool stopping = false;
  std::chrono::steady_clock::time_point killAt{};
  auto stopAll = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0)
        kill(p, sig);
  };
  while (alive > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      int r = 0;
      while (r < nproc && pids[r] != pid)
        ++r;
      if (r == nproc)
        continue;
      pids[r] = -1;
      --alive;
      bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !stopping) {
        firstFailed = r;
        firstStatus = status;
        exitCode = WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
        stopping = true;
        stopAll(SIGTERM);
        killAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      continue;
    }
    if (gStopRequested && !stopping) {
      std::cerr << "swift-run: interrupted; stopping all ranks\n";
      stopping = true;
      exitCode = 130;
      stopAll(SIGTERM);
      killAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (stopping && std::chrono::steady_clock::now() > killAt)
      stopAll(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (firstFailed >= 0) {
    // The root cause is the error written first: a rank whose peer failed
    // may exit first with the broken collective's error.
    int r = firstFailed;
    std::filesystem::file_time_type first{};
    for (int k = 0; k < nproc; ++k) {
      std::error_code ec;
      auto t = std::filesystem::last_write_time(errorFile(errorDir, k), ec);
      if (!ec && (first == std::filesystem::file_time_type{} || t < first))
        first = t, r = k;
    }
    std::cerr << failureReport(errorDir, r, r == firstFailed ? firstStatus : -1,
                               nproc)
              << std::endl;
  }
  return exitCode;
}

void reportFatal(const std::string &who, const std::string &message) {
  const char *dir = std::getenv("SWIFT_ERROR_DIR");
  const char *rank = std::getenv("RANK");
  if (dir && *dir && rank) {
    std::ofstream out(errorFile(dir, std::atoi(rank)));
    out << message << "\n";
    if (out.flush())
      return;
  }
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line))
    std::cerr << who << ": " << line << "\n";
  std::cerr.flush();
}

struct Watchdog::State {
  std::mutex mu;
  std::condition_variable cv;
  bool quit = false;
  std::chrono::steady_clock::time_point deadline;
  std::string last = "start-up";
  double seconds;
  std::thread thread;
};

Watchdog::Watchdog(double seconds) : s_(new State) {
  s_->seconds = seconds;
  // Start-up (rendezvous, NCCL init, first step's allocations) gets 3x.
  s_->deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(int64_t(seconds * 3000));
  s_->thread = std::thread([s = s_] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (!s->quit) {
      if (s->cv.wait_until(lock, s->deadline) == std::cv_status::timeout &&
          !s->quit && std::chrono::steady_clock::now() >= s->deadline) {
        std::ostringstream msg;
        msg << "error: no progress for " << s->seconds << " s after "
            << s->last << " (a peer rank probably died)";
        reportFatal("swift-run", msg.str());
        std::_Exit(1);
      }
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->quit = true;
  }
  s_->cv.notify_all();
  s_->thread.join();
  delete s_;
}

void Watchdog::progress(const char *what) {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->last = what;
  s_->deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(int64_t(s_->seconds * 1000));
  s_->cv.notify_all();
}

} // namespace swift::rt
