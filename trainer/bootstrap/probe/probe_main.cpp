// grpo-bootstrap-probe: the trainer's bootstrap without the trainer. Every rank bootstraps (PMIx
// or env), rank 0 listens on a TCP port and publishes it with exchange_rendezvous(), every other
// rank connects and sends its rank, rank 0 answers "ok" once all world_size-1 ranks arrived, and
// each rank prints one JSON line to stdout. Any failure: a one-line error on stderr, exit 1.
// Output format: docs/bootstrap.md.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "grpo/bootstrap/bootstrap.h"
#include "grpo/core/json_text.h"

extern char** environ;

namespace {

using grpo::bootstrap::Bootstrap;
using grpo::bootstrap::Endpoint;
using grpo::bootstrap::WorldInfo;
using Clock = std::chrono::steady_clock;

// A failure that ends the probe: its message is the one line printed on stderr.
struct ProbeError {
  std::string message;
};

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

// The first IPv4 address `host` resolves to, as a dotted string.
std::optional<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) {
    return std::nullopt;
  }
  char buf[INET_ADDRSTRLEN] = {};
  const auto* sin = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  const bool ok = ::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) != nullptr;
  ::freeaddrinfo(res);
  if (!ok) return std::nullopt;
  return std::string(buf);
}

struct Listener {
  Fd fd;
  Endpoint published;
  std::string bind;  // "resolved" (bound to a resolved host address) or "any" (0.0.0.0)
};

// Rank 0's listening socket. `host` is resolved to an IPv4 address to bind; when that fails it
// binds 0.0.0.0 and publishes `host` itself (the fallback is reported on stderr and in the JSON).
Listener listen_on(const std::string& host, std::uint16_t port, int backlog) {
  Listener out;
  const std::optional<std::string> ip = resolve_ipv4(host);
  out.fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (out.fd.get() < 0) throw ProbeError{errno_text("socket")};
  const int one = 1;
  ::setsockopt(out.fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (ip) {
    ::inet_pton(AF_INET, ip->c_str(), &addr.sin_addr);
    out.bind = "resolved";
  } else {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    out.bind = "any";
    std::cerr << "grpo-bootstrap-probe: warning: cannot resolve '" << host
              << "' to an IPv4 address; listening on 0.0.0.0\n";
  }
  if (::bind(out.fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw ProbeError{
        errno_text("bind " + (ip ? *ip : std::string("0.0.0.0")) + ":" + std::to_string(port))};
  }
  if (::listen(out.fd.get(), backlog) != 0) throw ProbeError{errno_text("listen")};
  socklen_t len = sizeof(addr);
  if (::getsockname(out.fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw ProbeError{errno_text("getsockname")};
  }
  out.published = Endpoint{ip ? *ip : host, ntohs(addr.sin_port)};
  return out;
}

// Reads until '\n' (excluded) or the deadline; throws on EOF, error or timeout.
std::string read_line(int fd, Clock::time_point deadline, const std::string& peer) {
  std::string line;
  char c = 0;
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, ms_left(deadline));
    if (n == 0) throw ProbeError{"timed out reading from " + peer};
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ProbeError{errno_text("poll " + peer)};
    }
    const ssize_t got = ::read(fd, &c, 1);
    if (got == 0) throw ProbeError{peer + " closed the connection"};
    if (got < 0) {
      if (errno == EINTR) continue;
      throw ProbeError{errno_text("read " + peer)};
    }
    if (c == '\n') return line;
    line += c;
    if (line.size() > 256) throw ProbeError{peer + " sent an overlong line"};
  }
}

void write_all(int fd, const std::string& text, const std::string& peer) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ProbeError{errno_text("send to " + peer)};
    }
    done += static_cast<size_t>(n);
  }
}

// Rank 0: accept world_size-1 connections, each announcing a distinct rank 1..world_size-1, then
// answer "ok" to all of them.
void serve(const Listener& listener, int world_size, Clock::time_point deadline) {
  std::map<int, Fd> peers;
  while (static_cast<int>(peers.size()) < world_size - 1) {
    pollfd pfd{listener.fd.get(), POLLIN, 0};
    const int n = ::poll(&pfd, 1, ms_left(deadline));
    if (n == 0) {
      throw ProbeError{"rank 0 timed out with " + std::to_string(peers.size()) + " of " +
                       std::to_string(world_size - 1) + " ranks connected"};
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ProbeError{errno_text("poll listener")};
    }
    Fd conn(::accept4(listener.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      throw ProbeError{errno_text("accept")};
    }
    const std::string line = read_line(conn.get(), deadline, "a connecting rank");
    int rank = -1;
    if (line.rfind("rank ", 0) == 0) {
      try {
        rank = std::stoi(line.substr(5));
      } catch (const std::exception&) {
        rank = -1;
      }
    }
    if (rank < 1 || rank >= world_size) {
      throw ProbeError{"rank 0 got an unexpected greeting '" + line + "'"};
    }
    if (peers.count(rank) != 0) {
      throw ProbeError{"rank 0 got two connections claiming rank " + std::to_string(rank)};
    }
    peers.emplace(rank, std::move(conn));
  }
  for (const auto& [rank, fd] : peers) {
    write_all(fd.get(), "ok " + std::to_string(world_size) + "\n", "rank " + std::to_string(rank));
  }
}

// Every other rank: connect (retrying until the deadline), announce, wait for "ok".
void join(const Endpoint& rendezvous, int rank, int world_size, Clock::time_point deadline) {
  const std::string peer = "rank 0 at " + grpo::bootstrap::to_string(rendezvous);
  std::string last_error;
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(rendezvous.port);
    const int gai = ::getaddrinfo(rendezvous.host.c_str(), port.c_str(), &hints, &res);
    if (gai != 0) {
      last_error = "resolve " + rendezvous.host + ": " + ::gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
        if (fd.get() < 0) {
          last_error = errno_text("socket");
          continue;
        }
        if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
          last_error = errno_text("connect to " + peer);
          continue;
        }
        ::freeaddrinfo(res);
        write_all(fd.get(), "rank " + std::to_string(rank) + "\n", peer);
        const std::string reply = read_line(fd.get(), deadline, peer);
        if (reply != "ok " + std::to_string(world_size)) {
          throw ProbeError{peer + " answered '" + reply + "'"};
        }
        return;
      }
      ::freeaddrinfo(res);
    }
    if (ms_left(deadline) == 0) throw ProbeError{"gave up: " + last_error};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool selected_env(std::string_view name) {
  static const std::vector<std::string_view> kPrefixes = {"GRPO_", "NCCL_", "GLOO_", "TORCH_"};
  static const std::set<std::string_view> kNames = {
      "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR",  "MASTER_PORT",
      "SLURM_JOB_ID",    "SLURM_STEP_ID",        "SLURM_PROCID", "SLURM_LOCALID",
      "SLURM_NODEID",    "SLURM_RESTART_COUNT",  "SLURM_NTASKS", "SLURMD_NODENAME"};
  // The supervisor's per-attempt failure-rate variables (GRPO_MTBF_*) are not part of the job's
  // environment contract, and the line must stay under srun's 1 KiB I/O message: srun --label
  // splits a longer line into separately labelled pieces (a known limit, docs/supervisor.md).
  if (name.substr(0, 10) == "GRPO_MTBF_") return false;
  for (std::string_view prefix : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return kNames.count(name) != 0;
}

nlohmann::json selected_environment() {
  nlohmann::json out = nlohmann::json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    if (selected_env(name)) out[std::string(name)] = std::string(entry.substr(eq + 1));
  }
  return out;
}

int usage(const char* argv0) {
  std::cerr << "usage: " << argv0 << " [--timeout-s SECONDS]\n";
  return 2;
}

int run(int timeout_s) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  auto created = Bootstrap::create();
  if (!created) throw ProbeError{created.error().str()};
  std::unique_ptr<Bootstrap> boot = std::move(created).value();
  const WorldInfo& world = boot->world();

  std::optional<Listener> listener;
  if (world.global_rank == 0) {
    if (world.fixed_rendezvous) {
      listener =
          listen_on(world.fixed_rendezvous->host, world.fixed_rendezvous->port, world.world_size);
      listener->published = *world.fixed_rendezvous;
    } else {
      std::string host = grpo::bootstrap::local_hostname();
      if (host.empty()) host = world.hostname;
      listener = listen_on(host, 0, world.world_size);
    }
  }
  auto exchanged =
      boot->exchange_rendezvous(listener ? std::optional(listener->published) : std::nullopt);
  if (!exchanged) throw ProbeError{"exchange_rendezvous: " + exchanged.error().str()};
  const Endpoint rendezvous = exchanged.value();

  if (world.global_rank == 0) {
    serve(*listener, world.world_size, deadline);
  } else {
    join(rendezvous, world.global_rank, world.world_size, deadline);
  }

  nlohmann::ordered_json line = {
      {"global_rank", world.global_rank},
      {"world_size", world.world_size},
      {"local_rank", world.local_rank},
      {"local_world_size", world.local_world_size},
      {"node_rank", world.node_rank},
      {"hostname", world.hostname},
      {"source", grpo::bootstrap::to_string(world.source)},
      {"rendezvous", grpo::bootstrap::to_string(rendezvous)},
      {"rendezvous_ok", true},
      {"env", selected_environment()},
  };
  if (listener) line["rendezvous_bind"] = listener->bind;
  if (!world.pmix_fallback_reason.empty())
    line["pmix_fallback_reason"] = world.pmix_fallback_reason;
  std::cout << grpo::core::json_text(line) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int timeout_s = 60;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--timeout-s" && i + 1 < argc) {
      try {
        timeout_s = std::stoi(argv[++i]);
      } catch (const std::exception&) {
        return usage(argv[0]);
      }
      if (timeout_s <= 0) return usage(argv[0]);
    } else {
      return usage(argv[0]);
    }
  }
  try {
    return run(timeout_s);
  } catch (const ProbeError& e) {
    std::cerr << "grpo-bootstrap-probe: " << e.message << "\n";
  } catch (const std::exception& e) {
    std::cerr << "grpo-bootstrap-probe: internal error: " << e.what() << "\n";
  }
  return 1;
}
