// Child processes of `warmroute demo`: this very binary (/proc/self/exe) run with other
// arguments (`engine ...`, `serve ...`), its stdout read line by line, and stopped on demand.
//
// Guarantees, so that no child outlives the demo:
//   - Each child gets PR_SET_PDEATHSIG(SIGKILL): if this process dies in any way (even SIGKILL),
//     the kernel kills the child.
//   - InstallStopHandler() makes SIGINT/SIGTERM send SIGTERM to every live child at once and
//     records the signal (PendingStopSignal()); the caller then unwinds and Stop()s its children.
//   - ~ChildProcess stops the child (SIGTERM, then SIGKILL after a grace period) and reaps it.
// The child's stdin is /dev/null and its stderr is ours (its log lines reach the user).
//
// Usage:
//   InstallStopHandler();
//   absl::StatusOr<std::unique_ptr<ChildProcess>> engine = ChildProcess::Spawn({"engine", ...});
//   absl::StatusOr<std::string> line = (*engine)->ReadLine(deadline);
//   absl::StatusOr<int> exit_status = (*engine)->Stop();
//
// Thread-safety: a ChildProcess belongs to the thread that spawned it (the kernel's death signal
// follows that thread). The stop handler is async-signal-safe.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace warmroute::cli {

class ChildProcess {
 public:
  // Runs /proc/self/exe with `args` (argv[1..]). Internal when fork/exec fails (an exec failure
  // shows as the child exiting 127 before its first line).
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& args);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // The next line of the child's stdout (without '\n'). DeadlineExceeded at `deadline`,
  // Unavailable when the child closed its stdout or exited (with its exit status), Cancelled when
  // a stop signal arrived (PendingStopSignal() != 0).
  absl::StatusOr<std::string> ReadLine(std::chrono::steady_clock::time_point deadline);

  // True while the child has not exited (reaps it if it has).
  bool Running();

  // SIGTERM, then SIGKILL after `grace`; reaps the child. Returns its wait status as a shell
  // would show it: the exit code, or 128 + the signal that killed it. Idempotent.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}
  void Reaped(int wait_status);

  pid_t pid_;
  int stdout_fd_;
  std::string buffer_;
  bool reaped_ = false;
  int exit_status_ = 0;
};

// Installs the SIGINT/SIGTERM handler described above (again: call it after anything else, such
// as an Asio signal_set, reset those signals to their defaults).
void InstallStopHandler();

// The signal the stop handler received, 0 if none.
int PendingStopSignal();

// A description of a shell-style exit status: "exit 1", "signal 9 (Killed)".
std::string DescribeExitStatus(int status);

}  // namespace warmroute::cli
