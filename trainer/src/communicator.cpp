#define GRPO_COMPAT_C10D
#include "grpo/trainer/communicator.h"

#include "c10d_rendezvous_store.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

namespace grpo::trainer {
namespace {

using core::ErrorKind;
using core::make_error;

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string backend() const override { return "single"; }
  core::Status allreduce_sum(at::Tensor&) override { return core::ok_status(); }
  core::Status allreduce_max(at::Tensor&) override { return core::ok_status(); }
  core::Status broadcast(at::Tensor&, int) override { return core::ok_status(); }
  core::Status barrier() override { return core::ok_status(); }
  core::Status allgather(const at::Tensor& in, at::Tensor& out) override {
    out.copy_(in.view(out.sizes()));
    return core::ok_status();
  }
  core::Status reduce_scatter(const at::Tensor& in, at::Tensor& out) override {
    out.copy_(in.view(out.sizes()));
    return core::ok_status();
  }
  core::Status alltoall(const at::Tensor& in, at::Tensor& out, const std::vector<std::int64_t>&,
                        const std::vector<std::int64_t>&) override {
    out.copy_(in);
    return core::ok_status();
  }
  core::Status exchange(const std::vector<P2pOp>& ops) override {
    if (!ops.empty()) return make_error(ErrorKind::kInvalidValue, "a world of one has no peer");
    return core::ok_status();
  }
  core::Result<std::unique_ptr<Communicator>> subgroup(const std::vector<int>& members,
                                                       const std::string&) override {
    if (members != std::vector<int>{0}) {
      return make_error(ErrorKind::kInvalidValue, "a world of one has only rank 0");
    }
    return std::unique_ptr<Communicator>(std::make_unique<SingleProcessCommunicator>());
  }
};

class C10dCommunicator final : public Communicator {
 public:
  C10dCommunicator(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<compat::GroupBase> pg,
                   int rank, int world, std::string backend, std::vector<int> global_ranks,
                   std::function<c10::intrusive_ptr<compat::GroupBase>(
                       c10::intrusive_ptr<c10d::Store>, int, int)>
                       make_group)
      : store_(std::move(store)),
        pg_(std::move(pg)),
        rank_(rank),
        world_(world),
        backend_(std::move(backend)),
        global_ranks_(std::move(global_ranks)),
        make_group_(std::move(make_group)) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::string backend() const override { return backend_; }

  core::Status allreduce_sum(at::Tensor& t) override { return allreduce(t, c10d::ReduceOp::SUM); }
  core::Status allreduce_max(at::Tensor& t) override { return allreduce(t, c10d::ReduceOp::MAX); }

  core::Status broadcast(at::Tensor& t, int root) override {
    return guarded("broadcast", [&] {
      std::vector<at::Tensor> v{wire(t)};
      c10d::BroadcastOptions opts;
      opts.rootRank = root;
      finish(pg_->broadcast(v, opts));
    });
  }

  core::Status barrier() override {
    // A tiny all-reduce instead of c10d's barrier, whose device handling differs by version.
    at::Tensor t = at::zeros({1}, at::kFloat);
    return allreduce(t, c10d::ReduceOp::SUM);
  }

  core::Status allgather(const at::Tensor& in, at::Tensor& out) override {
    return guarded("all-gather", [&] {
      std::vector<at::Tensor> inputs{wire(in.contiguous())};
      std::vector<std::vector<at::Tensor>> outputs(1);
      at::Tensor flat = wire(out).view({world_, -1});
      for (int r = 0; r < world_; ++r) outputs[0].push_back(flat[r].view(in.sizes()));
      finish(pg_->allgather(outputs, inputs));
    });
  }

  core::Status reduce_scatter(const at::Tensor& in, at::Tensor& out) override {
    return guarded("reduce-scatter", [&] {
      at::Tensor input = in.contiguous();
      if (backend_ == "nccl") {
        finish(pg_->_reduce_scatter_base(out, input));
        return;
      }
      // Gloo: every rank sends part r of its input to rank r and sums what it receives.
      std::vector<std::int64_t> parts(static_cast<std::size_t>(world_), out.size(0));
      at::Tensor received = at::empty_like(input);
      at::Tensor received_wire = wire(received);
      at::Tensor input_wire = wire(input);
      finish(pg_->alltoall_base(received_wire, input_wire, parts, parts));
      std::vector<std::int64_t> shape = out.sizes().vec();
      shape.insert(shape.begin(), world_);
      out.copy_(received.view(shape).sum(0));
    });
  }

  core::Status alltoall(const at::Tensor& in, at::Tensor& out,
                        const std::vector<std::int64_t>& send_counts,
                        const std::vector<std::int64_t>& recv_counts) override {
    return guarded("all-to-all", [&] {
      // c10d takes the split sizes by non-const reference (both LibTorch 1.13 and 2.x).
      std::vector<std::int64_t> out_splits = recv_counts;
      std::vector<std::int64_t> in_splits = send_counts;
      at::Tensor input = wire(in.contiguous());
      at::Tensor output = wire(out);
      finish(pg_->alltoall_base(output, input, out_splits, in_splits));
    });
  }

  core::Status exchange(const std::vector<P2pOp>& ops) override {
    return guarded("send/receive", [&] {
      std::vector<std::vector<at::Tensor>> tensors;
      tensors.reserve(ops.size());
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (const P2pOp& op : ops) {
        tensors.push_back({wire(op.tensor)});
        works.push_back(op.send ? pg_->send(tensors.back(), op.peer, /*tag=*/0)
                                : pg_->recv(tensors.back(), op.peer, /*tag=*/0));
      }
      for (auto& w : works) finish(w);
    });
  }

  core::Result<std::unique_ptr<Communicator>> subgroup(const std::vector<int>& members,
                                                       const std::string& name) override {
    // Members are given as this world's ranks; the group remembers them as the original world's.
    std::vector<int> global;
    int my_index = -1;
    for (int m : members) {
      if (m < 0 || m >= world_) {
        return make_error(ErrorKind::kInvalidValue,
                          "subgroup member " + std::to_string(m) + " is not a rank of this world");
      }
      if (m == rank_) my_index = static_cast<int>(global.size());
      global.push_back(global_ranks_[static_cast<std::size_t>(m)]);
    }
    if (my_index < 0) {
      return make_error(ErrorKind::kInvalidValue,
                        "rank " + std::to_string(rank_) + " is not a member of group " + name);
    }
    const int size = static_cast<int>(members.size());
    try {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("group/" + name, store_);
      auto pg = make_group_(prefixed, my_index, size);
      return std::unique_ptr<Communicator>(std::make_unique<C10dCommunicator>(
          store_, pg, my_index, size, backend_, std::move(global), make_group_));
    } catch (const c10::Error& e) {
      return make_error(ErrorKind::kUnavailable,
                        "group " + name + " failed to form: " + compat::error_text(e));
    } catch (const std::exception& e) {
      return make_error(ErrorKind::kUnavailable,
                        "group " + name + " failed to form: " + std::string(e.what()));
    }
  }

 private:
  core::Status allreduce(at::Tensor& t, c10d::ReduceOp op) {
    return guarded("all-reduce", [&] {
      // Gloo cannot add bf16: the sum runs in fp32 and is rounded back.
      const bool widen = backend_ == "gloo" && t.scalar_type() == at::kBFloat16;
      std::vector<at::Tensor> v{widen ? t.to(at::kFloat) : t};
      c10d::AllreduceOptions opts;
      opts.reduceOp = op;
      finish(pg_->allreduce(v, opts));
      if (widen) t.copy_(v[0]);
    });
  }

  // What a collective that only moves `t` hands to the backend: LibTorch 1.13's Gloo refuses
  // bf16 ("Invalid scalar type"), so its bits travel as fp16, which Gloo copies unchanged.
  at::Tensor wire(const at::Tensor& t) const {
    return backend_ == "gloo" && t.scalar_type() == at::kBFloat16 ? t.view(at::kHalf) : t;
  }

  // Waits for `work`; on Gloo also for its worker thread to drop its reference to the work
  // (it does right after completing it), so the tensors the work holds are freed by this thread
  // when the caller lets go of them: released where they were allocated, which
  // trainer.measure_activation_memory's per-thread count (allocation_peak.h) needs to see every
  // free (without it the measured peaks varied by up to 8% from run to run). Gives up waiting for
  // the release after 100 ms. Not on NCCL, whose watchdog keeps works for up to its sleep.
  void finish(const c10::intrusive_ptr<c10d::Work>& work) const {
    work->wait();
    if (backend_ != "gloo") return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (work.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
  }

  template <typename F>
  core::Status guarded(const char* what, F&& f) {
    try {
      f();
      return core::ok_status();
    } catch (const c10::Error& e) {
      return make_error(ErrorKind::kUnavailable,
                        std::string(what) + " failed: " + compat::error_text(e));
    } catch (const std::exception& e) {
      return make_error(ErrorKind::kUnavailable, std::string(what) + " failed: " + e.what());
    }
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::GroupBase> pg_;
  int rank_;
  int world_;
  std::string backend_;
  std::vector<int> global_ranks_;  // this group's ranks in the original world
  std::function<c10::intrusive_ptr<compat::GroupBase>(c10::intrusive_ptr<c10d::Store>, int, int)>
      make_group_;
};

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

}  // namespace

template <typename F>
core::Status TimedCommunicator::timed(std::int64_t* counter, std::int64_t bytes, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  core::Status st = f();
  totals_->seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (counter != nullptr) *counter += bytes;
  return st;
}

namespace {

std::int64_t nbytes(const at::Tensor& t) {
  return static_cast<std::int64_t>(t.numel()) * static_cast<std::int64_t>(t.element_size());
}

// "tp0" -> "tp", "edp2" -> "edp": the kind of a subgroup from its name (parallel.cpp).
std::string group_kind(const std::string& name) {
  std::string k = name;
  while (!k.empty() && k.back() >= '0' && k.back() <= '9') k.pop_back();
  return k.empty() ? name : k;
}

}  // namespace

core::Status TimedCommunicator::allreduce_sum(at::Tensor& t) {
  return timed(allreduce_bytes_, nbytes(t), [&] { return inner_->allreduce_sum(t); });
}
core::Status TimedCommunicator::allreduce_max(at::Tensor& t) {
  return timed(allreduce_bytes_, nbytes(t), [&] { return inner_->allreduce_max(t); });
}
core::Status TimedCommunicator::broadcast(at::Tensor& t, int root) {
  return timed(broadcast_bytes_, nbytes(t), [&] { return inner_->broadcast(t, root); });
}
core::Status TimedCommunicator::barrier() {
  return timed(nullptr, 0, [&] { return inner_->barrier(); });
}
core::Status TimedCommunicator::allgather(const at::Tensor& in, at::Tensor& out) {
  return timed(allgather_bytes_, nbytes(in), [&] { return inner_->allgather(in, out); });
}
core::Status TimedCommunicator::reduce_scatter(const at::Tensor& in, at::Tensor& out) {
  return timed(reduce_scatter_bytes_, nbytes(in), [&] { return inner_->reduce_scatter(in, out); });
}
core::Status TimedCommunicator::alltoall(const at::Tensor& in, at::Tensor& out,
                                         const std::vector<std::int64_t>& send_counts,
                                         const std::vector<std::int64_t>& recv_counts) {
  return timed(alltoall_bytes_, nbytes(in),
               [&] { return inner_->alltoall(in, out, send_counts, recv_counts); });
}
core::Status TimedCommunicator::exchange(const std::vector<P2pOp>& ops) {
  std::int64_t sent = 0;
  for (const P2pOp& op : ops) sent += op.send ? nbytes(op.tensor) : 0;
  return timed(send_bytes_, sent, [&] { return inner_->exchange(ops); });
}
core::Result<std::unique_ptr<Communicator>> TimedCommunicator::subgroup(
    const std::vector<int>& members, const std::string& name) {
  GRPO_TRY(auto inner, inner_->subgroup(members, name));
  return std::unique_ptr<Communicator>(
      std::make_unique<TimedCommunicator>(std::move(inner), totals_, group_kind(name)));
}

std::unique_ptr<Communicator> make_single_process_communicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

core::Result<std::unique_ptr<Communicator>> make_c10d_communicator(bootstrap::Bootstrap& boot,
                                                                   const CommOptions& options) {
  const bootstrap::WorldInfo& w = boot.world();
  try {
    // Rank 0 serves the run's rendezvous store on the address it was given (MASTER_ADDR in env
    // mode, so loopback for a local run; its host name under PMIx), open only to ranks proving
    // the run's secret (docs/security.md); the others connect to the address it publishes.
    c10::intrusive_ptr<c10d::Store> store;
    bootstrap::Endpoint endpoint;
    std::unique_ptr<bootstrap::StoreServer> server;
    if (w.global_rank == 0) {
      const std::string host = w.fixed_rendezvous ? w.fixed_rendezvous->host : w.hostname;
      const std::uint16_t port = w.fixed_rendezvous ? w.fixed_rendezvous->port : 0;
      GRPO_TRY(server, bootstrap::StoreServer::start(host, port, options.secret));
      endpoint = bootstrap::Endpoint{host, server->port()};
      auto published = boot.exchange_rendezvous(endpoint);
      if (!published.ok()) return published.error();
    } else {
      auto published = boot.exchange_rendezvous(std::nullopt);
      if (!published.ok()) return published.error();
      endpoint = *published;
    }
    auto client = bootstrap::StoreClient::connect(endpoint, options.secret, options.timeout);
    if (!client.ok()) {
      return make_error(client.error().kind, "rendezvous failed: " + client.error().message);
    }
    store = c10::make_intrusive<RendezvousC10dStore>(std::move(server), std::move(client).value(),
                                                     endpoint, options.secret, options.timeout);

    // The same recipe makes the world's group and every subgroup (over a prefixed store).
    std::function<c10::intrusive_ptr<compat::GroupBase>(c10::intrusive_ptr<c10d::Store>, int, int)>
        make_group;
    std::string backend;
    if (options.use_cuda) {
#if defined(USE_C10D_NCCL)
      const auto timeout = options.timeout;
      make_group = [timeout](c10::intrusive_ptr<c10d::Store> s, int rank, int size) {
        auto opts = c10d::ProcessGroupNCCL::Options::create();
        opts->timeout = timeout;
        return c10::intrusive_ptr<compat::GroupBase>(
            c10::make_intrusive<c10d::ProcessGroupNCCL>(s, rank, size, opts));
      };
      backend = "nccl";
#else
      return make_error(ErrorKind::kInvalidValue,
                        "this grpo-trainer was built against a LibTorch without NCCL");
#endif
    } else {
      std::shared_ptr<::gloo::transport::Device> device;
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
        device = compat::GlooGroup::createDeviceForInterface(ifname);
      } else if (is_loopback(endpoint.host)) {
        device = compat::GlooGroup::createDeviceForHostname("127.0.0.1");
      } else {
        device = compat::GlooGroup::createDefaultDevice();
      }
      const auto timeout = options.timeout;
      make_group = [timeout, device](c10::intrusive_ptr<c10d::Store> s, int rank, int size) {
        auto opts = compat::GlooGroup::Options::create(timeout);
        opts->devices.push_back(device);
        return c10::intrusive_ptr<compat::GroupBase>(
            c10::make_intrusive<compat::GlooGroup>(s, rank, size, opts));
      };
      backend = "gloo";
    }
    auto pg = make_group(store, w.global_rank, w.world_size);
    std::vector<int> ranks(static_cast<std::size_t>(w.world_size));
    for (int r = 0; r < w.world_size; ++r) ranks[static_cast<std::size_t>(r)] = r;
    return std::unique_ptr<Communicator>(std::make_unique<C10dCommunicator>(
        store, pg, w.global_rank, w.world_size, backend, std::move(ranks), make_group));
  } catch (const c10::Error& e) {
    return make_error(ErrorKind::kUnavailable, "rendezvous failed: " + compat::error_text(e));
  } catch (const std::exception& e) {
    return make_error(ErrorKind::kUnavailable, std::string("rendezvous failed: ") + e.what());
  }
}

}  // namespace grpo::trainer
