// wait_until_listening: the short-backoff wait for rank 0's store before a rank's store client
// connects (LibTorch 1.13's client would sleep 1 s after a refused connect).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A loopback TCP socket bound to `port` (0: any), listening unless told otherwise.
int bound_socket(std::uint16_t port, bool listening) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  if (listening) ::listen(fd, 16);
  return fd;
}

std::uint16_t port_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

TEST(WaitUntilListening, ReturnsAtOnceWhenTheStoreListens) {
  const int fd = bound_socket(0, true);
  ASSERT_GE(fd, 0);
  const auto t0 = Clock::now();
  const core::Status st = wait_until_listening({"127.0.0.1", port_of(fd)}, milliseconds(5000));
  EXPECT_TRUE(st.ok()) << st.error().str();
  EXPECT_LT(ms_since(t0), 500.0);
  ::close(fd);
}

// The store starts listening 150 ms after the wait began: the wait ends within one 16 ms pause
// of it (bound 600 ms on a loaded machine), not at LibTorch's 1 s retry.
TEST(WaitUntilListening, EndsSoonAfterTheStoreStartsListening) {
  // Bound but not listening: connects are refused, and no other program takes the port.
  const int fd = bound_socket(0, false);
  ASSERT_GE(fd, 0);
  const std::uint16_t port = port_of(fd);
  const auto t0 = Clock::now();
  std::thread late([fd] {
    std::this_thread::sleep_for(milliseconds(150));
    ::listen(fd, 16);
  });
  const core::Status st = wait_until_listening({"127.0.0.1", port}, milliseconds(5000));
  const double waited = ms_since(t0);
  late.join();
  EXPECT_TRUE(st.ok()) << st.error().str();
  EXPECT_GE(waited, 150.0);
  EXPECT_LT(waited, 600.0);
  ::close(fd);
}

TEST(WaitUntilListening, GivesUpAfterTheTimeoutWithOneLine) {
  const int fd = bound_socket(0, false);
  ASSERT_GE(fd, 0);
  const std::uint16_t port = port_of(fd);
  const auto t0 = Clock::now();
  const core::Status st = wait_until_listening({"127.0.0.1", port}, milliseconds(200));
  const double waited = ms_since(t0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, core::ErrorKind::kUnavailable);
  EXPECT_EQ(st.error().message, "127.0.0.1:" + std::to_string(port) +
                                    " is not listening after 200 ms (connect: Connection refused)");
  EXPECT_GE(waited, 200.0);
  EXPECT_LT(waited, 1000.0);
  ::close(fd);
}

}  // namespace
}  // namespace grpo::bootstrap
