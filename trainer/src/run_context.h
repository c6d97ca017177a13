// What the parts of a training run share (internal to grpo_trainer): the run's context
// (configuration, collectives, telemetry, faults, data, the current phase) and the resumable
// training state (model, reference, optimizer, sampling stream, counters). The run loop
// (run_loop.cpp) owns both; the step phases (step_phases.h) and checkpoint I/O (checkpointing.h)
// work on them. Collectives are issued in the same order on every rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grpo/core/model_spec.h"
#include "grpo/core/result.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/faults.h"
#include "grpo/trainer/grpo.h"
#include "grpo/trainer/model.h"
#include "grpo/trainer/parallel.h"
#include "grpo/trainer/sharding_plan.h"
#include "grpo/trainer/tasks.h"
#include "grpo/trainer/telemetry.h"
#include "grpo/trainer/tensor_io.h"
#include "grpo/trainer/torch_compat.h"

namespace grpo::trainer {

// An error that ends the run with a specific exit code (thrown by fault injection, caught in
// run_trainer: the edge).
struct ExitRequest {
  int code;
  std::string message;
};

// The exit code (exit_codes.h) of a run that fails with `e`.
int exit_code_for(const core::Error& e);

double seconds_since(std::chrono::steady_clock::time_point t0);

// The seed of rank `rank`'s sampling stream: each rank samples from its own.
std::uint64_t sampling_seed(std::int64_t seed, int rank);

// The resumable state of a run: what a checkpoint holds (checkpointing.h).
struct TrainState {
  std::shared_ptr<QwenModel> model;
  std::shared_ptr<QwenModel> ref;  // frozen reference, created when GRPO starts
  // The rollout's whole model when it runs at rollout TP = 1 under a TP or EP layout (null
  // otherwise: the training model generates): refreshed from the shards before each rollout.
  std::shared_ptr<QwenModel> rollout;
  std::unique_ptr<AdamW> optim;
  at::Generator sample_gen;  // this rank's sampling stream

  std::int64_t step = 0;         // completed steps (SFT and GRPO)
  std::int64_t data_cursor = 0;  // train examples consumed, all ranks together
  bool grpo_started = false;
};

// `st.model`'s parameters, in its order, as checkpoints hold them: the optimizer's fp32 masters
// where it keeps them (this rank's stage under mixed precision), the parameters themselves
// elsewhere. After copying into them call st.optim->sync_params().
NamedTensors model_weights(const TrainState& st);

// The run's environment: everything a step needs besides the training state.
struct RunContext {
  RunContext(TrainerConfig config, core::ModelSpec model_spec,
             std::unique_ptr<Communicator> communicator, Telemetry& telemetry,
             FaultInjector injector);

  TrainerConfig cfg;
  core::ModelSpec spec;
  std::unique_ptr<TimedCommunicator> comm;  // adds up the time inside collectives (comm_s)
  Telemetry& tel;
  FaultInjector faults;
  int rank;
  int world;
  std::unique_ptr<TaskData> data;  // the built-in task or a dataset (make_task_data)
  ParallelState par;               // the layout this rank runs (set up by the run loop)
  // The run's sharding plan (full_model.h sharding_plan): made on first use after `par` is set,
  // then the same for the whole run.
  mutable std::shared_ptr<const ShardingPlan> plan_cache;
  std::string phase = "setup";
  // Called before an injected fault ends or freezes the process (the run loop lets a background
  // checkpoint write finish: fault tests see every earlier checkpoint on disk). May be empty.
  std::function<void()> before_fatal_fault;

  // 1 on the rank that counts its data-parallel replica's tokens (TP rank 0 of the first
  // pipeline stage), 0 on the others.
  int counts_data() const { return par.coords.tp == 0 && par.coords.pp == 0 ? 1 : 0; }
  // Sets the phase and sends a heartbeat for it.
  void enter_phase(std::int64_t s, const std::string& name);
  // Fires the injected faults due at (s, name) on this rank (faults.h); `model` takes the
  // imbalance fault. May not return (crash, kill, stop, abort) or throw ExitRequest (exit).
  void fire_step_faults(std::int64_t s, const std::string& name, QwenModel& model);
};

// The train examples of this rank for a step of `global_count` examples (all ranks together),
// taken at the data cursor, which advances by global_count.
std::vector<const Example*> take_examples(const RunContext& ctx, TrainState& st,
                                          std::int64_t global_count);

// One step's event fields.
struct StepMetrics {
  nlohmann::json fields = nlohmann::json::object();
  std::int64_t tokens = 0;  // prompt + response tokens of the global batch
};

// Sums (value, weight) pairs over ranks: returns value sums and weight sums.
class MeanAccumulator {
 public:
  void add(const std::string& key, double value, double weight = 1.0) {
    auto& [v, w] = sums_[key];
    v += value * weight;
    w += weight;
  }
  // Reduces across ranks and returns key -> weighted mean.
  core::Result<std::map<std::string, double>> reduce(Communicator& comm) const;

 private:
  std::map<std::string, std::pair<double, double>> sums_;
};

}  // namespace grpo::trainer
