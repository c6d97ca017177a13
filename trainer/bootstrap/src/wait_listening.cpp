// wait_until_listening (bootstrap.h): polls rank 0's rendezvous port with short connects.
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap {

namespace {

// One connect to each of the endpoint's addresses; true at the first that accepts.
bool try_connect(const Endpoint& endpoint, std::string& last_error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (const int gai = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &res); gai != 0) {
    last_error = "resolve " + endpoint.host + ": " + ::gai_strerror(gai);
    return false;
  }
  bool connected = false;
  for (addrinfo* ai = res; ai != nullptr && !connected; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      connected = true;
    } else {
      last_error = std::string("connect: ") + std::strerror(errno);
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return connected;
}

}  // namespace

core::Status wait_until_listening(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  std::string last_error;
  while (true) {
    if (try_connect(endpoint, last_error)) return core::ok_status();
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(16));
  }
  return core::make_error(core::ErrorKind::kUnavailable,
                          to_string(endpoint) + " is not listening after " +
                              std::to_string(timeout.count()) + " ms (" + last_error + ")");
}

}  // namespace grpo::bootstrap
