//===- Launch.h - process topology: launcher, env rendezvous, watchdog ----===//
//
// Two ways to get ranks:
//  - `swift-run plan.json --nproc-per-node N`: this process becomes the
//    launcher. It hosts the c10d TCPStore, fork/execs itself N times with
//    RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
//    MASTER_PORT and SWIFT_STORE_HOSTED=1 set, and supervises: when a rank
//    exits non-zero or is killed, the others get SIGTERM (then SIGKILL after
//    a grace period) and the launcher exits non-zero with one error line:
//    the failing rank's own message (ranks it launched report fatal
//    errors to it through files in SWIFT_ERROR_DIR instead of printing
//    them, so N ranks failing alike, and the peers whose collectives broke
//    because of it, print nothing of their own).
//  - torchrun / srun / mpirun: each process reads the same variables
//    (srun's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID and OpenMPI's
//    OMPI_COMM_WORLD_* are accepted when RANK is absent); rank 0 hosts the
//    store unless torchrun's agent does (TORCHELASTIC_USE_AGENT_STORE).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace swift::rt {

struct RankEnv {
  int rank = 0, world = 1, localRank = 0, localWorld = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  bool hostStore = true; // this process starts the TCPStore server
};

/// Reads the environment of a rank. A missing RANK/WORLD_SIZE means a
/// single-process job. Malformed values are a UserError.
RankEnv readRankEnv();

/// Runs the launcher; returns the process exit code (0, 1, or 2 when every
/// failing rank reported bad input).
int launchLocalRanks(int nproc, const std::vector<std::string> &childArgs);

/// On SIGSEGV, SIGBUS, SIGFPE or SIGILL: one line naming the signal and
/// the process's backtrace (addresses, and names where the binary exports
/// them) on stderr, then the default action (the exit status the launcher
/// reports). A crash is a bug; this says where.
void installCrashHandler(const char *who);

/// A rank's fatal error, "<who>: <message>" possibly over several lines:
/// printed to stderr, or, under the local launcher (SWIFT_ERROR_DIR set),
/// written where the launcher prints it from. `peerFailure` marks the
/// symptom of another rank's death (a broken collective, no progress),
/// which the launcher reports only when no rank left a cause of its own.
/// `exitCode` is the status the rank exits with (2: the user's input); the
/// launcher exits with it even when it had to stop the rank before its
/// exit.
void reportFatal(const std::string &who, const std::string &message,
                 bool peerFailure = false, int exitCode = 1);

/// Ends the process (exit 1) with a message if no progress is reported
/// within `seconds` (a peer died inside a collective that has no timeout,
/// e.g. NCCL; or this rank is stuck). progress(what) re-arms it; the first
/// arm (start-up) gets 3x. The message names the rank, how long it waited
/// and after what; at world 1 (RANK/WORLD_SIZE, readRankEnv) it blames no
/// peer: the rank is its own cause. SWIFT_FAULT_STALL=WHAT (tests) stalls
/// the rank right after progress(WHAT).
class Watchdog {
public:
  explicit Watchdog(double seconds);
  ~Watchdog();
  void progress(const char *what);

private:
  struct State;
  State *s_;
};

} // namespace swift::rt
