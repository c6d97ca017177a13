// The data-parallel collectives the trainer needs, behind one small interface: c10d's C++ API
// differs between LibTorch versions, and tests want a single-process implementation.
// Every call is collective: all ranks call it in the same order. Failures (a peer died, a
// timeout) come back as kUnavailable with c10d's message; nothing throws.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grpo/bootstrap/bootstrap.h"
#include "grpo/core/result.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// One point-to-point transfer of a batch (Communicator::exchange): send `tensor` to `peer`, or
// receive into it from `peer` (ranks of the communicator's group).
struct P2pOp {
  bool send = true;
  at::Tensor tensor;  // contiguous; the receiver's has the sender's shape and dtype
  int peer = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;  // "single", "gloo", "nccl"

  // In place, on a contiguous tensor: the element-wise sum / max over ranks.
  virtual core::Status allreduce_sum(at::Tensor& tensor) = 0;
  virtual core::Status allreduce_max(at::Tensor& tensor) = 0;
  // In place: every rank ends with root's values (same shape and dtype on every rank).
  virtual core::Status broadcast(at::Tensor& tensor, int root) = 0;
  virtual core::Status barrier() = 0;
  // `out` (contiguous, [world * n, ...]) receives every rank's `in` ([n, ...], the same shape on
  // every rank) in rank order.
  virtual core::Status allgather(const at::Tensor& in, at::Tensor& out) = 0;
  // `out` ([n, ...], contiguous) receives this rank's part of the element-wise sum over ranks of
  // `in` ([world * n, ...], contiguous, the same shape on every rank): rows [rank * n, (rank + 1)
  // * n). NCCL's own reduce-scatter; on Gloo (LibTorch 1.13 has none) an all-to-all of the parts
  // and a sum in rank order, the same bytes on the wire as a ring reduce-scatter.
  virtual core::Status reduce_scatter(const at::Tensor& in, at::Tensor& out) = 0;
  // Variable-size all-to-all along dim 0. `in` (contiguous) holds send_counts[i] rows for rank i,
  // in rank order; `out` (contiguous, sum of recv_counts rows, the same row shape and dtype)
  // receives recv_counts[i] rows from rank i, in rank order. recv_counts[i] must equal rank i's
  // send_counts[this rank]. Both lists have world_size() entries.
  virtual core::Status alltoall(const at::Tensor& in, at::Tensor& out,
                                const std::vector<std::int64_t>& send_counts,
                                const std::vector<std::int64_t>& recv_counts) = 0;
  // Point-to-point, not collective: posts every transfer of `ops` at once and waits for all of
  // them (torch's batch_isend_irecv; pipeline stages exchange activations and gradients so,
  // and no order of sends and receives between two stages can deadlock). The peer of each send
  // posts the matching receive in its own exchange, in the same order.
  virtual core::Status exchange(const std::vector<P2pOp>& ops) = 0;
  // A communicator over `members` (global ranks of this world, ascending, this rank among them).
  // Only the members call it, once per group, with a `name` unique among the world's groups; its
  // rank() is this rank's index in `members`. Errors: kUnavailable.
  virtual core::Result<std::unique_ptr<Communicator>> subgroup(const std::vector<int>& members,
                                                               const std::string& name) = 0;
};

// World of one: every collective is the identity.
std::unique_ptr<Communicator> make_single_process_communicator();

// Wraps a communicator and adds up the wall time spent inside its collectives: the step
// event's `comm_s` (docs/telemetry.md). In synchronous data parallelism that time is mostly
// waiting for the slowest rank, so step_s - comm_s tells a straggler apart.
// It also counts the payload bytes this rank hands to each kind of collective, by group kind
// (`world`, or a subgroup's name without its digits: `tp`, `dp`, `ep`, `edp`) and operation
// (`allreduce`, `broadcast`, `allgather`, `reduce_scatter`, `alltoall`, `send`):
// "tp.allreduce" -> bytes.
// The payload is the tensor a rank passes (all-gather: its own part; reduce-scatter: the whole
// input; all-to-all: every row it sends, its own included), not the wire traffic of the
// algorithm; point-to-point: the tensors it sends.
struct CommTotals {
  double seconds = 0;
  std::map<std::string, std::int64_t> bytes;
};

class TimedCommunicator final : public Communicator {
 public:
  // Subgroups made through a TimedCommunicator add their time and bytes to the same totals.
  explicit TimedCommunicator(std::unique_ptr<Communicator> inner,
                             std::shared_ptr<CommTotals> totals = std::make_shared<CommTotals>(),
                             std::string kind = "world")
      : inner_(std::move(inner)),
        totals_(std::move(totals)),
        kind_(std::move(kind)),
        allreduce_bytes_(&totals_->bytes[kind_ + ".allreduce"]),
        broadcast_bytes_(&totals_->bytes[kind_ + ".broadcast"]),
        allgather_bytes_(&totals_->bytes[kind_ + ".allgather"]),
        reduce_scatter_bytes_(&totals_->bytes[kind_ + ".reduce_scatter"]),
        alltoall_bytes_(&totals_->bytes[kind_ + ".alltoall"]),
        send_bytes_(&totals_->bytes[kind_ + ".send"]) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string backend() const override { return inner_->backend(); }
  core::Status allreduce_sum(at::Tensor& tensor) override;
  core::Status allreduce_max(at::Tensor& tensor) override;
  core::Status broadcast(at::Tensor& tensor, int root) override;
  core::Status barrier() override;
  core::Status allgather(const at::Tensor& in, at::Tensor& out) override;
  core::Status reduce_scatter(const at::Tensor& in, at::Tensor& out) override;
  core::Status alltoall(const at::Tensor& in, at::Tensor& out,
                        const std::vector<std::int64_t>& send_counts,
                        const std::vector<std::int64_t>& recv_counts) override;
  core::Status exchange(const std::vector<P2pOp>& ops) override;
  core::Result<std::unique_ptr<Communicator>> subgroup(const std::vector<int>& members,
                                                       const std::string& name) override;
  double seconds() const { return totals_->seconds; }  // inside collectives so far
  // Payload bytes so far, by "<group kind>.<operation>" (an operation not used yet: 0).
  const std::map<std::string, std::int64_t>& bytes() const { return totals_->bytes; }

 private:
  // Runs f, adds its time to the totals and `bytes` to *counter (null: no payload).
  template <typename F>
  core::Status timed(std::int64_t* counter, std::int64_t bytes, F&& f);
  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<CommTotals> totals_;
  std::string kind_;
  // This group's entries of totals_->bytes, made once (std::map entries never move): a
  // collective adds to its counter without building the key.
  std::int64_t* allreduce_bytes_;
  std::int64_t* broadcast_bytes_;
  std::int64_t* allgather_bytes_;
  std::int64_t* reduce_scatter_bytes_;
  std::int64_t* alltoall_bytes_;
  std::int64_t* send_bytes_;
};

struct CommOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  bool use_cuda = false;  // NCCL instead of Gloo (only when built against a CUDA LibTorch)
  // The run's rendezvous secret (the run directory's rendezvous.secret); empty: the store takes
  // any client that reaches its address (a run started without grpo-launch).
  std::string secret;
};

// c10d over the run's rendezvous store (grpo/bootstrap/rendezvous_store.h): rank 0 serves it (at
// MASTER_ADDR:MASTER_PORT in env mode, bound to that address only; on a free port of its host
// name's address, published through bootstrap.exchange_rendezvous under PMIx), the others
// connect, each side proving `options.secret`.
// Gloo binds to the interface named by GLOO_SOCKET_IFNAME, or to 127.0.0.1 when rank 0 is on
// loopback, or to the host's address. Errors: kUnavailable (rendezvous or connection failed).
core::Result<std::unique_ptr<Communicator>> make_c10d_communicator(bootstrap::Bootstrap& bootstrap,
                                                                   const CommOptions& options);

}  // namespace grpo::trainer
