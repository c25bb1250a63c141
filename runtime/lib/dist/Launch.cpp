//===- Launch.cpp - local launcher, env parsing, watchdog -----------------===//
#include "swift/Runtime/dist/Launch.h"

#include "swift/Plan/Files.h"
#include "swift/Runtime/core/Check.h"
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
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

/// The fatal-error file of rank r under the launcher's error directory; a
/// broken collective (a peer's failure seen from here) goes to its own name.
std::string errorFile(const std::string &dir, int r, bool peer = false) {
  return dir + "/rank-" + std::to_string(r) + (peer ? ".peer" : "");
}

/// The exit status rank r meant when it wrote its error (reportFatal):
/// the file holds it; absent, 1.
std::string statusFile(const std::string &dir, int r) {
  return dir + "/rank-" + std::to_string(r) + ".status";
}

/// Rank r's error file, its own cause first; empty when it left none.
std::string writtenErrorFile(const std::string &dir, int r) {
  for (bool peer : {false, true})
    if (std::filesystem::exists(errorFile(dir, r, peer)))
      return errorFile(dir, r, peer);
  return {};
}

/// The signal that asked the launcher to stop (SIGINT, SIGTERM), else 0.
volatile sig_atomic_t gStopRequested = 0;
void onStopSignal(int sig) { gStopRequested = sig; }

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
  std::ifstream in(writtenErrorFile(dir, r));
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

/// The rank whose failure the launcher reports. A rank that dies takes the
/// others' collectives down with it, and those peers may exit (and be
/// reaped) first, so the order of exits is not the order of causes:
///  1. the first error a rank wrote about its own failure (bad data, OOM),
///     among the ranks that then exited by themselves (ranks failing alike
///     race: one may write its error and be stopped, by the launcher that
///     saw the other exit, before its own exit); else among all;
///  2. else the first rank ended by a signal the launcher did not send;
///  3. else the first broken-collective error written;
///  4. else the first rank to exit non-zero.
int rootCause(const std::string &dir, int nproc, int firstFailed,
              const std::vector<int> &killedOutside,
              const std::vector<int> &statuses) {
  auto firstWritten = [&](bool peer, bool exitedOnly = false) {
    int best = -1;
    std::filesystem::file_time_type first{};
    for (int k = 0; k < nproc; ++k) {
      if (exitedOnly && !WIFEXITED(statuses[k]))
        continue;
      std::error_code ec;
      auto t = std::filesystem::last_write_time(errorFile(dir, k, peer), ec);
      if (!ec && (best < 0 || t < first))
        first = t, best = k;
    }
    return best;
  };
  if (int r = firstWritten(false, /*exitedOnly=*/true); r >= 0)
    return r;
  if (int r = firstWritten(false); r >= 0)
    return r;
  if (!killedOutside.empty())
    return killedOutside.front();
  if (int r = firstWritten(true); r >= 0)
    return r;
  return firstFailed;
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
    ~RemoveDir() { (void)plan::removeTree(path); }
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

  // How often the launcher reaps; tests slow it so that a rank and the
  // peer its death broke are both gone before it looks.
  const int pollMs = envInt({"SWIFT_FAULT_LAUNCHER_POLL_MS"}, 20, 1, 10000);
  int alive = nproc, exitCode = 0, firstFailed = -1;
  std::vector<int> statuses(nproc, 0);
  // Ranks that ended by a signal the launcher did not send (kill -9, the
  // kernel's OOM killer, a segfault), in the order they were reaped.
  std::vector<int> killedOutside;
  bool stopping = false;
  std::chrono::steady_clock::time_point killAt{};
  // Exits as a process the stop signal ended: 130 (SIGINT), 143 (SIGTERM).
  auto interrupted = [&](const char *what) {
    std::cerr << "swift-run: " << strsignal(gStopRequested) << "; " << what
              << "\n";
    exitCode = 128 + gStopRequested;
  };
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
      statuses[r] = status;
      bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      // A stop signal sent to the process group (Ctrl-C in a terminal, a
      // scheduler's cancel) reaches the ranks too, maybe before the
      // launcher sees its own: an interruption, not a rank's failure.
      const int stopSignal = gStopRequested;
      if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const bool ours =
            (stopping && (sig == SIGTERM ||
                          (sig == SIGKILL &&
                           std::chrono::steady_clock::now() > killAt))) ||
            (stopSignal && sig == stopSignal);
        if (!ours)
          killedOutside.push_back(r);
      }
      if (failed && !stopping && !stopSignal) {
        firstFailed = r;
        stopping = true;
        stopAll(SIGTERM);
        killAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      continue;
    }
    if (gStopRequested && !stopping) {
      interrupted("stopping all ranks");
      stopping = true;
      stopAll(SIGTERM);
      killAt = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (stopping && std::chrono::steady_clock::now() > killAt)
      stopAll(SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(pollMs));
  }
  // Every rank ended by the group's stop signal before the loop saw it.
  if (gStopRequested && !stopping)
    interrupted("all ranks stopped");
  if (firstFailed >= 0) {
    // The exit status is the cause's, not the first exit's: a peer whose
    // collective broke may be reaped before the rank that refused its
    // input (exit 2).
    const int r = rootCause(errorDir, nproc, firstFailed, killedOutside, statuses);
    // A rank that wrote a user error may be stopped (by the launcher that
    // saw a peer's broken collective exit first) before its own exit 2:
    // the status it meant is in its status file.
    int meant = 0;
    std::ifstream(statusFile(errorDir, r)) >> meant;
    exitCode = (WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 2) || meant == 2
                   ? 2
                   : 1;
    std::cerr << failureReport(errorDir, r, statuses[r], nproc) << std::endl;
  }
  return exitCode;
}

void reportFatal(const std::string &who, const std::string &message,
                 bool peerFailure, int exitCode) {
  const char *dir = std::getenv("SWIFT_ERROR_DIR");
  const char *rank = std::getenv("RANK");
  if (dir && *dir && rank) {
    // The status first: the error file's time orders the causes, and a
    // rank stopped right after writing it has said both.
    std::ofstream(statusFile(dir, std::atoi(rank))) << exitCode << "\n";
    std::ofstream out(errorFile(dir, std::atoi(rank), peerFailure));
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
  std::chrono::steady_clock::time_point since, deadline;
  std::string last; // the progress last reported; "": none yet
  double seconds;
  int rank = 0, world = 1;
  std::thread thread;
};

namespace {

/// What a rank without progress tells: how long, since what, and why. With
/// no peer (world 1) it cannot be one: the rank itself is stuck or slow.
std::string noProgressMessage(const std::string &last, double waited,
                              double seconds, int rank, int world) {
  std::ostringstream msg;
  msg << "error: rank " << rank << " of " << world << " made no progress for "
      << std::llround(waited) << " s "
      << (last.empty() ? std::string("during start-up") : "after " + last);
  if (world == 1)
    msg << "; no other rank runs, so this one is stuck or slow: an input "
           "that blocks or a hung filesystem, or work that needs more than "
           "--timeout "
        << seconds << " s allows";
  else
    msg << " (a peer rank probably died, or this rank is stuck)";
  return msg.str();
}

} // namespace

Watchdog::Watchdog(double seconds) : s_(new State) {
  s_->seconds = seconds;
  const RankEnv env = readRankEnv();
  s_->rank = env.rank;
  s_->world = env.world;
  // Start-up (rendezvous, NCCL init, first step's allocations) gets 3x.
  s_->since = std::chrono::steady_clock::now();
  s_->deadline =
      s_->since + std::chrono::milliseconds(int64_t(seconds * 3000));
  s_->thread = std::thread([s = s_] {
    std::unique_lock<std::mutex> lock(s->mu);
    while (!s->quit) {
      if (s->cv.wait_until(lock, s->deadline) == std::cv_status::timeout &&
          !s->quit && std::chrono::steady_clock::now() >= s->deadline) {
        const double waited = std::chrono::duration<double>(
                                  std::chrono::steady_clock::now() - s->since)
                                  .count();
        // Alone, the rank's own failure; among peers, maybe the symptom of
        // another's death, reported only when no rank left a cause.
        reportFatal("swift-run",
                    noProgressMessage(s->last, waited, s->seconds, s->rank,
                                      s->world),
                    /*peerFailure=*/s->world > 1);
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
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->last = what;
    s_->since = std::chrono::steady_clock::now();
    s_->deadline =
        s_->since + std::chrono::milliseconds(int64_t(s_->seconds * 1000));
  }
  s_->cv.notify_all();
  // Tests: SWIFT_FAULT_STALL=WHAT makes the rank stop making progress
  // right after WHAT, as a rank stuck on an input would.
  if (const char *stall = std::getenv("SWIFT_FAULT_STALL");
      stall && std::strcmp(stall, what) == 0)
    for (;;)
      std::this_thread::sleep_for(std::chrono::hours(1));
}

namespace {
const char *gCrashWho = "swift-run";

void onCrash(int sig, siginfo_t *info, void *context) {
  // Only async-signal-safe calls: write(2) and backtrace_symbols_fd.
  char line[240];
  int n = std::snprintf(line, sizeof line,
                        "%s: fatal signal %d (%s) at address %p: a bug in "
                        "swift-run; backtrace:\n",
                        gCrashWho, sig, strsignal(sig),
                        info ? info->si_addr : nullptr);
  if (n > 0)
    (void)!::write(2, line, size_t(n));
  // The faulting instruction, and the caller's return address on top of
  // the stack: a call through a null pointer has no frame to unwind, and
  // the return address is all that names the caller.
#if defined(__x86_64__)
  if (context) {
    const auto *uc = static_cast<const ucontext_t *>(context);
    void *where[2] = {
        reinterpret_cast<void *>(uc->uc_mcontext.gregs[REG_RIP]),
        *reinterpret_cast<void *const *>(uc->uc_mcontext.gregs[REG_RSP])};
    n = std::snprintf(line, sizeof line, "faulting instruction, then [rsp]:\n");
    (void)!::write(2, line, size_t(n));
    backtrace_symbols_fd(where, 2, 2);
  }
#else
  (void)context;
#endif
  void *frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
} // namespace

void installCrashHandler(const char *who) {
  gCrashWho = who;
  void *warm[1];
  backtrace(warm, 1); // loads libgcc now, not in the handler
  struct sigaction sa {};
  sa.sa_sigaction = onCrash;
  sa.sa_flags = SA_RESETHAND | SA_SIGINFO;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    sigaction(sig, &sa, nullptr);
}

} // namespace swift::rt
