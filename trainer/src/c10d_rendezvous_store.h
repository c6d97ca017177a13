// c10d's Store over the run's rendezvous store (grpo/bootstrap/rendezvous_store.h): what c10d's
// process groups read and write, served by rank 0 on the address it was given and open only to
// ranks holding the run's secret. Rank 0's instance also owns the server. Errors become
// c10::Error, as c10d expects of a store (TCPStore throws on a timeout too).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpo/bootstrap/rendezvous_store.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

class RendezvousC10dStore final : public c10d::Store {
 public:
  // `endpoint` and `secret`: where `client` is connected and with what (for clone()).
  RendezvousC10dStore(std::unique_ptr<bootstrap::StoreServer> server,
                      std::unique_ptr<bootstrap::StoreClient> client, bootstrap::Endpoint endpoint,
                      std::string secret, std::chrono::milliseconds timeout)
      : c10d::Store(timeout),
        server_(std::move(server)),
        client_(std::move(client)),
        endpoint_(std::move(endpoint)),
        secret_(std::move(secret)) {}

#if GRPO_TORCH_AT_LEAST(2, 5)
  // LibTorch 2.5+ asks a store for a second connection (ProcessGroupNCCL's monitor thread).
  c10::intrusive_ptr<c10d::Store> clone() override {
    auto client = value(bootstrap::StoreClient::connect(endpoint_, secret_, timeout_));
    return c10::make_intrusive<RendezvousC10dStore>(nullptr, std::move(client), endpoint_, secret_,
                                                    timeout_);
  }
#endif

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    ensure(client_->set(key, text(value)));
  }
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& current,
                                  const std::vector<uint8_t>& desired) override {
    return bytes(value(client_->compare_set(key, text(current), text(desired))));
  }
  std::vector<uint8_t> get(const std::string& key) override {
    return bytes(value(client_->get(key, limit(timeout_))));
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return value(client_->add(key, delta));
  }
  bool deleteKey(const std::string& key) override {
    return value(client_->remove(key));
  }
  bool check(const std::vector<std::string>& keys) override {
    return value(client_->check(keys));
  }
  int64_t getNumKeys() override {
    return value(client_->num_keys());
  }
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, timeout_);
  }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    ensure(client_->wait(keys, limit(timeout)));
  }

 private:
  // c10d's kNoTimeout (zero) waits without end: a day stands for it.
  static std::chrono::milliseconds limit(std::chrono::milliseconds t) {
    return t.count() <= 0 ? std::chrono::hours(24) : t;
  }
  static std::string text(const std::vector<uint8_t>& v) {
    return {v.begin(), v.end()};
  }
  static std::vector<uint8_t> bytes(const std::string& s) {
    return {s.begin(), s.end()};
  }
  static void ensure(const core::Status& st) {
    TORCH_CHECK(st.ok(), st.error().message);
  }
  template <typename T>
  static T value(core::Result<T> r) {
    TORCH_CHECK(r.ok(), r.error().message);
    return std::move(r).value();
  }

  std::unique_ptr<bootstrap::StoreServer> server_;  // rank 0 only; outlives every request
  std::unique_ptr<bootstrap::StoreClient> client_;
  bootstrap::Endpoint endpoint_;
  std::string secret_;
};

}  // namespace grpo::trainer
