// What one system call costs on this machine: a loop of 200,000 calls each of a null call
// (getppid), a recv that finds nothing (EAGAIN, as Asio's speculative reads do), an epoll_ctl
// MOD and a non-blocking epoll_wait, on a loopback TCP connection. On a VM these include the
// hypervisor's share, which is why they are measured rather than assumed.
//
// Usage: g++ -O2 bench/syscall_cost.cc -o /tmp/syscall_cost && /tmp/syscall_cost
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace {

constexpr int kCalls = 200'000;

template <typename Call>
void Measure(const char* name, Call call) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) call();
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  std::printf("%-24s %6.0f ns per call\n", name, took.count() / kCalls);
}

}  // namespace

int main() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("listen");
    return 1;
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    std::perror("connect");
    return 1;
  }
  const int server = accept(listener, nullptr, nullptr);
  fcntl(server, F_SETFL, O_NONBLOCK);
  char buffer[4096];
  Measure("getppid", [] { syscall(SYS_getppid); });
  Measure("recv (EAGAIN)", [&] { (void)!recv(server, buffer, sizeof(buffer), 0); });
  const int epoll = epoll_create1(0);
  epoll_event event{};
  event.events = EPOLLIN | EPOLLOUT | EPOLLET;
  event.data.fd = server;
  epoll_ctl(epoll, EPOLL_CTL_ADD, server, &event);
  Measure("epoll_ctl (MOD)", [&] { epoll_ctl(epoll, EPOLL_CTL_MOD, server, &event); });
  epoll_event ready[8];
  Measure("epoll_wait (timeout 0)", [&] { epoll_wait(epoll, ready, 8, 0); });
  return 0;
}
