// The rendezvous store (rendezvous_store.h). Wire format, all integers little-endian:
//   handshake  server: "GRPOSTORE1" + nonce_s (32 bytes)
//              client: nonce_c (32) + HMAC(secret, "client" nonce_s nonce_c) (32)
//              server: HMAC(secret, "server" nonce_c nonce_s) (32), or closes the connection
//   frame      u32 length + body (at most kMaxFrame bytes)
//   request    u8 op + fields; a string is u32 length + bytes, an integer i64
//   answer     u8 status (0 ok, 1 timed out) + fields
// One thread per connection; a request that waits (GET, WAIT) parks on a condition variable.
#include "grpo/bootstrap/rendezvous_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <set>
#include <thread>

namespace grpo::bootstrap {

using core::ErrorKind;
using core::make_error;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kMagic[] = "GRPOSTORE1";
constexpr std::size_t kMagicLen = sizeof kMagic - 1;
constexpr std::size_t kNonce = 32, kMac = 32;
constexpr std::uint32_t kMaxFrame = 64u << 20;  // c10d keys hold addresses and small blobs
constexpr int kMaxConnections = 16384;
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

enum Op : std::uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kDelete, kCheck, kNumKeys, kWait };
enum Answer : std::uint8_t { kOk = 0, kTimedOut = 1 };

std::string mac(const std::string& secret, std::string_view label, std::string_view a,
                std::string_view b) {
  std::string msg(label);
  msg.append(a).append(b);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string nonce() {
  std::string n(kNonce, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size()));
  return n;
}

// Reads exactly n bytes before `deadline` (nullopt: no deadline). False on EOF, error or time.
bool read_full(int fd, char* p, std::size_t n, std::optional<Clock::time_point> deadline) {
  while (n > 0) {
    if (deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{fd, POLLIN, 0};
      const int r =
          ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
    }
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_full(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_i64(std::string& out, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((u >> (8 * i)) & 0xff);
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}
std::string frame(const std::string& body) {
  std::string out;
  put_u32(out, static_cast<std::uint32_t>(body.size()));
  return out + body;
}

// A cursor over a received body; every read checks the length first.
struct Reader {
  std::string_view s;
  bool ok = true;
  std::uint64_t uint(int bytes) {
    if (!ok || s.size() < static_cast<std::size_t>(bytes)) return ok = false, 0;
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(s[i])) << (8 * i);
    s.remove_prefix(static_cast<std::size_t>(bytes));
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(uint(8)); }
  std::string str() {
    const auto n = static_cast<std::size_t>(uint(4));
    if (!ok || s.size() < n) return ok = false, std::string();
    std::string out(s.substr(0, n));
    s.remove_prefix(n);
    return out;
  }
};

std::optional<std::string> read_frame(int fd, std::optional<Clock::time_point> deadline) {
  char len[4];
  if (!read_full(fd, len, 4, deadline)) return std::nullopt;
  const auto n = static_cast<std::uint32_t>(Reader{std::string_view(len, 4)}.uint(4));
  if (n > kMaxFrame) return std::nullopt;
  std::string body(n, '\0');
  if (!read_full(fd, body.data(), n, deadline)) return std::nullopt;
  return body;
}

}  // namespace

struct StoreServer::State {
  std::string secret;
  int listen_fd = -1;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<int> refused{0};
  std::thread acceptor;
  std::mutex mu;  // guards everything below
  std::condition_variable changed;
  std::map<std::string, std::string> kv;
  std::set<int> fds;                 // open connections (shut down on stop)
  std::vector<std::thread> threads;  // one per connection
  int live = 0;

  void serve(int fd);
  std::optional<std::string> answer(Reader& r);
};

std::optional<std::string> StoreServer::State::answer(Reader& r) {
  const auto op = static_cast<std::uint8_t>(r.uint(1));
  std::string out;
  std::unique_lock<std::mutex> lock(mu);
  const auto ready = [&](const std::vector<std::string>& keys) {
    return std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return kv.count(k) > 0; });
  };
  const auto wait_for = [&](const std::vector<std::string>& keys, std::int64_t ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(std::max<std::int64_t>(ms, 0));
    return changed.wait_until(lock, until, [&] { return stopping.load() || ready(keys); }) &&
           !stopping.load();
  };
  switch (op) {
    case kSet: {
      std::string key = r.str(), value = r.str();
      if (!r.ok) return std::nullopt;
      kv[std::move(key)] = std::move(value);
      changed.notify_all();
      return std::string(1, kOk);
    }
    case kGet: {
      std::string key = r.str();
      const std::int64_t ms = r.i64();
      if (!r.ok) return std::nullopt;
      if (!wait_for({key}, ms)) return std::string(1, kTimedOut);
      out += static_cast<char>(kOk);
      put_str(out, kv[key]);
      return out;
    }
    case kAdd: {
      std::string key = r.str();
      const std::int64_t delta = r.i64();
      if (!r.ok) return std::nullopt;
      std::int64_t v = 0;
      if (auto it = kv.find(key); it != kv.end()) {
        try {
          v = std::stoll(it->second);
        } catch (const std::exception&) {
          return std::nullopt;  // not a counter: the client's request is wrong
        }
      }
      v += delta;
      kv[key] = std::to_string(v);
      changed.notify_all();
      out += static_cast<char>(kOk);
      put_i64(out, v);
      return out;
    }
    case kCompareSet: {
      std::string key = r.str(), expected = r.str(), desired = r.str();
      if (!r.ok) return std::nullopt;
      auto it = kv.find(key);
      std::string result;
      if ((it == kv.end() && expected.empty()) || (it != kv.end() && it->second == expected)) {
        kv[key] = desired;
        result = desired;
        changed.notify_all();
      } else {
        result = it == kv.end() ? expected : it->second;
      }
      out += static_cast<char>(kOk);
      put_str(out, result);
      return out;
    }
    case kDelete: {
      std::string key = r.str();
      if (!r.ok) return std::nullopt;
      out += static_cast<char>(kOk);
      out += static_cast<char>(kv.erase(key) > 0 ? 1 : 0);
      return out;
    }
    case kCheck:
    case kWait: {
      const auto n = r.uint(4);
      std::vector<std::string> keys;
      for (std::uint64_t i = 0; r.ok && i < n; ++i) keys.push_back(r.str());
      const std::int64_t ms = op == kWait ? r.i64() : 0;
      if (!r.ok) return std::nullopt;
      if (op == kCheck) {
        out += static_cast<char>(kOk);
        out += static_cast<char>(ready(keys) ? 1 : 0);
        return out;
      }
      return std::string(1, wait_for(keys, ms) ? kOk : kTimedOut);
    }
    case kNumKeys:
      out += static_cast<char>(kOk);
      put_i64(out, static_cast<std::int64_t>(kv.size()));
      return out;
    default:
      return std::nullopt;
  }
}

void StoreServer::State::serve(int fd) {
  // The handshake: prove the secret both ways before any key is read or written.
  const auto deadline = Clock::now() + kHandshakeTimeout;
  const std::string ns = nonce();
  bool ok = write_full(fd, std::string(kMagic, kMagicLen) + ns);
  std::string reply(kNonce + kMac, '\0');
  ok = ok && read_full(fd, reply.data(), reply.size(), deadline);
  if (ok) {
    const std::string nc = reply.substr(0, kNonce);
    if (!same(reply.substr(kNonce), mac(secret, "client", ns, nc))) {
      refused.fetch_add(1);
      ok = false;
    } else {
      ok = write_full(fd, mac(secret, "server", nc, ns));
    }
  }
  while (ok && !stopping.load()) {
    auto body = read_frame(fd, std::nullopt);
    if (!body) break;
    Reader r{*body};
    auto out = answer(r);
    if (!out || !write_full(fd, frame(*out))) break;  // a malformed request ends the connection
  }
  std::lock_guard<std::mutex> lock(mu);
  fds.erase(fd);
  ::close(fd);
  --live;
}

core::Result<std::unique_ptr<StoreServer>> StoreServer::start(const std::string& host,
                                                              std::uint16_t port,
                                                              std::string secret) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      gai != 0) {
    return make_error(ErrorKind::kUnavailable,
                      "rendezvous store: cannot resolve " + host + ": " + ::gai_strerror(gai));
  }
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      why = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    return make_error(ErrorKind::kUnavailable, "rendezvous store: cannot listen on " + host + ":" +
                                                   std::to_string(port) + ": " + why);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto st = std::make_shared<State>();
  st->secret = std::move(secret);
  st->listen_fd = fd;
  st->port = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  st->acceptor = std::thread([st = st.get()] {
    while (!st->stopping.load()) {
      const int c = ::accept4(st->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (st->stopping.load()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like
        continue;
      }
      const int one = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(st->mu);
      if (st->stopping.load() || st->live >= kMaxConnections) {
        ::close(c);
        continue;
      }
      st->fds.insert(c);
      ++st->live;
      st->threads.emplace_back([st, c] { st->serve(c); });
    }
  });
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(st)));
}

StoreServer::StoreServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

StoreServer::~StoreServer() {
  State& s = *state_;
  s.stopping.store(true);
  ::shutdown(s.listen_fd, SHUT_RDWR);  // wakes accept
  if (s.acceptor.joinable()) s.acceptor.join();
  ::close(s.listen_fd);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (int fd : s.fds) ::shutdown(fd, SHUT_RDWR);  // wakes reads
    s.changed.notify_all();                          // wakes waits
    threads.swap(s.threads);
  }
  for (auto& t : threads) t.join();
}

std::uint16_t StoreServer::port() const {
  return state_->port;
}
int StoreServer::refused() const {
  return state_->refused.load();
}

// ---- client ----

core::Result<std::unique_ptr<StoreClient>> StoreClient::connect(const Endpoint& endpoint,
                                                                const std::string& secret,
                                                                std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = "rendezvous store " + to_string(endpoint);
  std::string last = "timed out";
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int fd = -1;
    if (const int gai = ::getaddrinfo(endpoint.host.c_str(), std::to_string(endpoint.port).c_str(),
                                      &hints, &res);
        gai != 0) {
      last = std::string("cannot resolve: ") + ::gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
        fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && ::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
          last = std::strerror(errno);
          ::close(fd);
          fd = -1;
        }
      }
      ::freeaddrinfo(res);
    }
    if (fd >= 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::string hello(kMagicLen + kNonce, '\0');
      if (!read_full(fd, hello.data(), hello.size(), deadline) ||
          hello.compare(0, kMagicLen, kMagic) != 0) {
        ::close(fd);
        return make_error(ErrorKind::kUnavailable, where + ": not a grpo-trainer store");
      }
      const std::string ns = hello.substr(kMagicLen), nc = nonce();
      std::string proof(kMac, '\0');
      if (!write_full(fd, nc + mac(secret, "client", ns, nc)) ||
          !read_full(fd, proof.data(), proof.size(), deadline)) {
        ::close(fd);
        return make_error(ErrorKind::kRejected,
                          where +
                              ": the server refused this rank's secret (another run's store, "
                              "or a different rendezvous.secret)");
      }
      if (!same(proof, mac(secret, "server", nc, ns))) {
        ::close(fd);
        return make_error(ErrorKind::kRejected,
                          where + ": the server does not hold this run's secret");
      }
      return std::unique_ptr<StoreClient>(new StoreClient(fd, timeout));
    }
    if (Clock::now() + pause >= deadline) {
      return make_error(ErrorKind::kUnavailable, where + ": " + last);
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(16));
  }
}

StoreClient::~StoreClient() {
  ::close(fd_);
}

core::Result<std::string> StoreClient::call(const std::string& request,
                                            std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!write_full(fd_, frame(request))) {
    return make_error(ErrorKind::kUnavailable, "rendezvous store: connection lost");
  }
  // The server answers a waiting request when it ends; the rest at once.
  auto body = read_frame(fd_, Clock::now() + wait + io_timeout_);
  if (!body || body->empty()) {
    return make_error(ErrorKind::kUnavailable, "rendezvous store: connection lost");
  }
  if (static_cast<std::uint8_t>((*body)[0]) == kTimedOut) {
    return make_error(ErrorKind::kUnavailable,
                      "rendezvous store: timed out after " + std::to_string(wait.count()) + " ms");
  }
  return body->substr(1);
}

core::Status StoreClient::set(const std::string& key, std::string_view value) {
  std::string req(1, static_cast<char>(kSet));
  put_str(req, key);
  put_str(req, value);
  GRPO_TRY_STATUS(call(req, std::chrono::milliseconds(0)));
  return core::ok_status();
}

core::Result<std::string> StoreClient::get(const std::string& key,
                                           std::chrono::milliseconds timeout) {
  std::string req(1, static_cast<char>(kGet));
  put_str(req, key);
  put_i64(req, timeout.count());
  GRPO_TRY(auto body, call(req, timeout));
  Reader r{body};
  std::string v = r.str();
  if (!r.ok) return make_error(ErrorKind::kUnavailable, "rendezvous store: bad answer");
  return v;
}

core::Result<std::int64_t> StoreClient::add(const std::string& key, std::int64_t delta) {
  std::string req(1, static_cast<char>(kAdd));
  put_str(req, key);
  put_i64(req, delta);
  GRPO_TRY(auto body, call(req, std::chrono::milliseconds(0)));
  Reader r{body};
  const std::int64_t v = r.i64();
  if (!r.ok) return make_error(ErrorKind::kUnavailable, "rendezvous store: bad answer");
  return v;
}

core::Result<std::string> StoreClient::compare_set(const std::string& key,
                                                   std::string_view expected,
                                                   std::string_view desired) {
  std::string req(1, static_cast<char>(kCompareSet));
  put_str(req, key);
  put_str(req, expected);
  put_str(req, desired);
  GRPO_TRY(auto body, call(req, std::chrono::milliseconds(0)));
  Reader r{body};
  std::string v = r.str();
  if (!r.ok) return make_error(ErrorKind::kUnavailable, "rendezvous store: bad answer");
  return v;
}

core::Result<bool> StoreClient::remove(const std::string& key) {
  std::string req(1, static_cast<char>(kDelete));
  put_str(req, key);
  GRPO_TRY(auto body, call(req, std::chrono::milliseconds(0)));
  return !body.empty() && body[0] == 1;
}

core::Result<bool> StoreClient::check(const std::vector<std::string>& keys) {
  std::string req(1, static_cast<char>(kCheck));
  put_u32(req, static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) put_str(req, k);
  GRPO_TRY(auto body, call(req, std::chrono::milliseconds(0)));
  return !body.empty() && body[0] == 1;
}

core::Result<std::int64_t> StoreClient::num_keys() {
  GRPO_TRY(auto body,
           call(std::string(1, static_cast<char>(kNumKeys)), std::chrono::milliseconds(0)));
  Reader r{body};
  const std::int64_t v = r.i64();
  if (!r.ok) return make_error(ErrorKind::kUnavailable, "rendezvous store: bad answer");
  return v;
}

core::Status StoreClient::wait(const std::vector<std::string>& keys,
                               std::chrono::milliseconds timeout) {
  std::string req(1, static_cast<char>(kWait));
  put_u32(req, static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) put_str(req, k);
  put_i64(req, timeout.count());
  GRPO_TRY_STATUS(call(req, timeout));
  return core::ok_status();
}

}  // namespace grpo::bootstrap
