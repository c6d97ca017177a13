// The rendezvous store (grpo/bootstrap/rendezvous_store.h) over loopback sockets: what c10d asks
// of a store, that only clients holding the run's secret are served, and that it listens on the
// address it was given alone (LibTorch 1.13's TCPStore listened on every interface and took any
// connection: from 127.0.0.2 its keys could be listed and rewritten).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "grpo/bootstrap/rendezvous_store.h"

namespace grpo::bootstrap {
namespace {

using std::chrono::milliseconds;
const std::string kSecret(64, 'a');

std::unique_ptr<StoreServer> serve(const std::string& secret = kSecret) {
  auto s = StoreServer::start("127.0.0.1", 0, secret);
  EXPECT_TRUE(s.ok()) << s.error().str();
  return std::move(s).value();
}

std::unique_ptr<StoreClient> client(const StoreServer& s, const std::string& secret = kSecret) {
  auto c = StoreClient::connect({"127.0.0.1", s.port()}, secret, milliseconds(5000));
  EXPECT_TRUE(c.ok()) << c.error().str();
  return std::move(c).value();
}

TEST(RendezvousStore, ServesWhatC10dAsks) {
  auto server = serve();
  auto a = client(*server), b = client(*server);
  ASSERT_TRUE(a->set("k", std::string("v\0w", 3)).ok());
  EXPECT_EQ(b->get("k", milliseconds(1000)).value(), std::string("v\0w", 3));
  EXPECT_EQ(a->add("n", 2).value(), 2);
  EXPECT_EQ(b->add("n", -5).value(), -3);
  EXPECT_TRUE(a->check({"k", "n"}).value());
  EXPECT_FALSE(a->check({"k", "missing"}).value());
  EXPECT_EQ(a->num_keys().value(), 2);
  // compareSet as TCPStore: absent + expected "" sets; a mismatch returns the current value.
  EXPECT_EQ(a->compare_set("c", "", "1").value(), "1");
  EXPECT_EQ(a->compare_set("c", "0", "2").value(), "1");
  EXPECT_EQ(a->compare_set("c", "1", "2").value(), "2");
  EXPECT_EQ(a->compare_set("absent", "x", "y").value(), "x");
  EXPECT_TRUE(a->remove("c").value());
  EXPECT_FALSE(a->remove("c").value());
  // A waiting get is answered when another client sets the key.
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(50));
    ASSERT_TRUE(a->set("late", "x").ok());
  });
  EXPECT_EQ(b->get("late", milliseconds(5000)).value(), "x");
  later.join();
  EXPECT_TRUE(b->wait({"k", "late"}, milliseconds(1000)).ok());
  // And times out when nobody does.
  const auto t0 = std::chrono::steady_clock::now();
  auto never = b->get("never", milliseconds(100));
  ASSERT_FALSE(never.ok());
  EXPECT_NE(never.error().message.find("timed out"), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(100));
  EXPECT_FALSE(b->wait({"never"}, milliseconds(50)).ok());
  EXPECT_EQ(b->get("k", milliseconds(10)).value(), std::string("v\0w", 3));  // still usable
}

TEST(RendezvousStore, RefusesAClientWithoutTheSecret) {
  auto server = serve();
  auto wrong =
      StoreClient::connect({"127.0.0.1", server->port()}, std::string(64, 'b'), milliseconds(5000));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, core::ErrorKind::kRejected);
  EXPECT_EQ(server->refused(), 1);
  auto none = StoreClient::connect({"127.0.0.1", server->port()}, "", milliseconds(5000));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(server->refused(), 2);
  // A client speaking another protocol (or a port scanner) gets nothing and leaves no key.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(server->port());
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string junk(96, 'x');
  ASSERT_EQ(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  char buf[256];
  ssize_t n = 0, total = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) total += n;  // the greeting, then closed
  EXPECT_EQ(total, 10 + 32);
  ::close(fd);
  EXPECT_EQ(client(*server)->num_keys().value(), 0);
  // The client also checks the server: one with another secret is not trusted.
  auto other = serve(std::string(64, 'c'));
  auto c = StoreClient::connect({"127.0.0.1", other->port()}, kSecret, milliseconds(5000));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, core::ErrorKind::kRejected);
}

TEST(RendezvousStore, ListensOnTheGivenAddressOnly) {
  auto server = serve();
  // 127.0.0.2 is this host too (all of 127/8 is loopback), but not the address given.
  auto elsewhere = StoreClient::connect({"127.0.0.2", server->port()}, kSecret, milliseconds(200));
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.error().kind, core::ErrorKind::kUnavailable);
  EXPECT_NE(elsewhere.error().message.find("Connection refused"), std::string::npos)
      << elsewhere.error().message;
}

TEST(RendezvousStore, ClientWaitsForAServerThatStartsLater) {
  // Take a free port, release it, and start the server there after the client began trying.
  std::uint16_t port = 0;
  {
    auto probe = serve();
    port = probe->port();
  }
  std::unique_ptr<StoreServer> server;
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    auto s = StoreServer::start("127.0.0.1", port, kSecret);
    ASSERT_TRUE(s.ok()) << s.error().str();
    server = std::move(s).value();
  });
  auto c = StoreClient::connect({"127.0.0.1", port}, kSecret, milliseconds(5000));
  later.join();
  ASSERT_TRUE(c.ok()) << c.error().str();
  EXPECT_TRUE((*c)->set("x", "1").ok());
}

TEST(RendezvousStore, StoppingWakesAWaitingClient) {
  auto server = serve();
  auto c = client(*server);
  std::thread stop([&] {
    std::this_thread::sleep_for(milliseconds(50));
    server.reset();
  });
  auto got = c->get("never", milliseconds(10000));
  stop.join();
  EXPECT_FALSE(got.ok());
}

}  // namespace
}  // namespace grpo::bootstrap
