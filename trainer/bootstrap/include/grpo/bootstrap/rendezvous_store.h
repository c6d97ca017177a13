// The rendezvous store: the key-value store through which a run's ranks find each other (c10d's
// process groups keep their addresses and counters in it). Rank 0 serves it; every rank is a
// client. LibTorch-free: the trainer wraps StoreClient in a c10d::Store (communicator.cpp).
//
// Why not LibTorch's TCPStore: 1.13's listens on every interface and takes any connection, so on
// a shared cluster anybody who can reach the port could list and rewrite the keys. This server
// listens only on the address it is given (loopback for a local run, the address the plan chose
// for rank 0 otherwise) and, when it has a secret, serves only clients that prove they hold it:
// a mutual HMAC-SHA256 challenge over fresh 32-byte nonces (docs/security.md). The connection is
// authenticated, not encrypted.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "grpo/bootstrap/bootstrap.h"
#include "grpo/core/result.h"

namespace grpo::bootstrap {

class StoreServer {
 public:
  // Listens on `host` (a name or address; the first address it resolves to) at `port` (0: a free
  // port) and serves until destroyed. `secret` empty: no authentication (a run without a secret
  // file; loopback only is then the whole protection). Errors: kUnavailable (resolve, bind).
  static core::Result<std::unique_ptr<StoreServer>> start(const std::string& host,
                                                          std::uint16_t port, std::string secret);
  ~StoreServer();  // closes every connection, wakes every waiter, joins the threads
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::uint16_t port() const;
  // Connections refused so far because they did not prove the secret (tests, logs).
  int refused() const;

  struct State;

 private:
  explicit StoreServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// One connection to the server; every call is one request and its answer, serialized by a mutex
// (c10d calls a store from several threads).
class StoreClient {
 public:
  // Connects (retrying a refused connect with 1-16 ms waits until `timeout`) and runs the mutual
  // handshake. Errors: kUnavailable (no server, or it closed the connection), kRejected (the
  // server did not prove the secret, or refused ours).
  static core::Result<std::unique_ptr<StoreClient>> connect(const Endpoint& endpoint,
                                                            const std::string& secret,
                                                            std::chrono::milliseconds timeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  core::Status set(const std::string& key, std::string_view value);
  // The value once the key exists; kUnavailable "timed out ..." after `timeout`.
  core::Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout);
  // Adds `delta` to the key's integer value (absent: 0) and returns the new value.
  core::Result<std::int64_t> add(const std::string& key, std::int64_t delta);
  // TCPStore's compareSet: absent and `expected` empty, or present and equal to `expected`: set
  // to `desired` and return it; else return the current value (absent: `expected`).
  core::Result<std::string> compare_set(const std::string& key, std::string_view expected,
                                        std::string_view desired);
  core::Result<bool> remove(const std::string& key);               // whether it existed
  core::Result<bool> check(const std::vector<std::string>& keys);  // whether all exist
  core::Result<std::int64_t> num_keys();
  // Returns once every key exists; kUnavailable "timed out ..." after `timeout`.
  core::Status wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

 private:
  StoreClient(int fd, std::chrono::milliseconds io_timeout) : fd_(fd), io_timeout_(io_timeout) {}
  core::Result<std::string> call(const std::string& request, std::chrono::milliseconds wait);
  int fd_;
  std::chrono::milliseconds io_timeout_;
  std::mutex mu_;
};

}  // namespace grpo::bootstrap
