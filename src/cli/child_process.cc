#include "cli/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"

namespace warmroute::cli {
namespace {

// The live children, for the signal handler: slots hold a pid or 0. Lock-free atomics are
// async-signal-safe.
constexpr size_t kMaxChildren = 64;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};
std::atomic<int> g_stop_signal{0};

void Register(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
  // More children than slots: the death signal still covers them.
}

void Unregister(pid_t pid) {
  for (std::atomic<pid_t>& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

extern "C" void OnStopSignal(int signal) {
  g_stop_signal.store(signal);
  for (std::atomic<pid_t>& slot : g_children) {
    const pid_t pid = slot.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
}

int ShellStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& args) {
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls.
  static constexpr char kSelf[] = "/proc/self/exe";
  char self[4096];
  const ssize_t n = ::readlink(kSelf, self, sizeof(self) - 1);
  if (n <= 0) return absl::InternalError(absl::StrCat("readlink ", kSelf, ": ", strerror(errno)));
  self[n] = '\0';
  std::vector<std::string> argv_storage = {"warmroute"};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    // The child starts with default signal handlers (ours would signal its own children).
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(pipe_fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    ::execv(self, argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  Register(pid);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, pipe_fds[0]));
}

ChildProcess::~ChildProcess() {
  Stop();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

void ChildProcess::Reaped(int wait_status) {
  reaped_ = true;
  exit_status_ = ShellStatus(wait_status);
  Unregister(pid_);
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  int wait_status = 0;
  const pid_t r = ::waitpid(pid_, &wait_status, WNOHANG);
  if (r == pid_) Reaped(wait_status);
  return !reaped_;
}

absl::StatusOr<std::string> ChildProcess::ReadLine(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    if (const size_t eol = buffer_.find('\n'); eol != std::string::npos) {
      std::string line = buffer_.substr(0, eol);
      buffer_.erase(0, eol + 1);
      return line;
    }
    if (PendingStopSignal() != 0) return absl::CancelledError("interrupted");
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return absl::DeadlineExceededError("no output in time");
    // Short polls, so that a stop signal is noticed at once even if poll is restarted.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd pfd{.fd = stdout_fd_, .events = POLLIN, .revents = 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    }
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t got = ::read(stdout_fd_, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // Closed: give the child a moment to exit so that its status can be told.
      for (int i = 0; i < 20 && Running(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      return absl::UnavailableError(
          Running() ? "closed its stdout"
                    : absl::StrCat("exited (", DescribeExitStatus(exit_status_), ")"));
    }
    buffer_.append(chunk, static_cast<size_t>(got));
  }
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (!Running()) return exit_status_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (Running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    int wait_status = 0;
    while (::waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
    }
    Reaped(wait_status);
  }
  return exit_status_;
}

void InstallStopHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int PendingStopSignal() { return g_stop_signal.load(); }

std::string DescribeExitStatus(int status) {
  if (status > 128)
    return absl::StrCat("signal ", status - 128, " (", strsignal(status - 128), ")");
  return absl::StrCat("exit ", status);
}

}  // namespace warmroute::cli
