#include "run_loop.h"
#include "grpo/core/run_dir.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "full_model.h"
#include "grpo/core/checkpoint_interval.h"
#include "grpo/core/telemetry_events.h"
#include "grpo/plan/plan_render.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/system_info.h"
#include "run_control.h"
#include "step_phases.h"

namespace grpo::trainer {
using core::ErrorKind;

TrainingRun::TrainingRun(TrainerConfig cfg, core::ModelSpec spec, std::filesystem::path run_dir,
                         std::unique_ptr<bootstrap::Bootstrap> boot,
                         std::unique_ptr<Communicator> comm, Telemetry& telemetry,
                         FaultInjector faults, std::unique_ptr<TaskData> data)
    : run_dir_(std::move(run_dir)),
      boot_(std::move(boot)),
      ctx_(std::move(cfg), std::move(spec), std::move(comm), telemetry, std::move(faults)),
      checkpoints_(ctx_, run_dir_ / core::run_dir::kCheckpoints) {
  ctx_.before_fatal_fault = [this] { checkpoints_.drain(); };
  ctx_.data = std::move(data);
}

TrainingRun::~TrainingRun() {
  // The telemetry outlives this run (run_trainer reports out-of-memory after it).
  if (tensorboard_) ctx_.tel.set_observer(nullptr);
}

namespace {

// The run's mean time between failures as the supervisor computed it from its event log
// (GRPO_MTBF_S, GRPO_MTBF_SOURCE, GRPO_MTBF_FAILURES; docs/supervisor.md), or, for a trainer
// started without one, one node's default figure (core/checkpoint_interval.h).
core::MtbfEstimate mtbf_from_environment() {
  const char* secs = std::getenv("GRPO_MTBF_S");
  if (secs != nullptr) {
    char* end = nullptr;
    const double v = std::strtod(secs, &end);
    if (end != secs && *end == '\0' && v > 0) {
      const char* source = std::getenv("GRPO_MTBF_SOURCE");
      const char* failures = std::getenv("GRPO_MTBF_FAILURES");
      return core::MtbfEstimate{v, failures != nullptr ? std::atoi(failures) : 0,
                                source != nullptr ? source : "supervisor"};
    }
    spdlog::warn("GRPO_MTBF_S={} is not a positive number of seconds: ignored", secs);
  }
  return core::MtbfEstimate{core::kDefaultNodeMtbfHours * 3600.0, 0, "default"};
}

}  // namespace

core::Status TrainingRun::choose_save_interval(std::int64_t s, double cost_s, bool full_cost) {
  at::Tensor next = at::zeros({1}, at::kLong);
  if (ctx_.rank == 0) {
    const std::int64_t left = ctx_.cfg.total_steps() - s;
    const core::MtbfEstimate mtbf = mtbf_from_environment();
    double step_s = 1.0;
    if (!recent_step_s_.empty()) {
      step_s = std::accumulate(recent_step_s_.begin(), recent_step_s_.end(), 0.0) /
               static_cast<double>(recent_step_s_.size());
    }
    // The interval must outlast the newest background write, or the next save waits for it.
    const double min_s = full_cost ? 0.0 : checkpoints_.last_write_s();
    const core::SaveInterval v =
        core::young_daly_interval(cost_s, mtbf.seconds, std::max(step_s, 1e-6), min_s, left);
    next[0] = s + v.steps;
    spdlog::info("next checkpoint at step {} (every {} step(s): {}; MTBF {:.0f} s, {})",
                 s + v.steps, v.steps, v.why, mtbf.seconds, mtbf.source);
    ctx_.tel.emit(core::telemetry::event::kSaveInterval, {{"step", s},
                                                          {"cost_s", cost_s},
                                                          {"cost", full_cost ? "full" : "blocking"},
                                                          {"mtbf_s", mtbf.seconds},
                                                          {"mtbf_source", mtbf.source},
                                                          {"failures", mtbf.failures},
                                                          {"step_s", step_s},
                                                          {"interval_s", v.seconds},
                                                          {"interval_steps", v.steps},
                                                          {"next_save_step", s + v.steps},
                                                          {"why", v.why}});
  }
  GRPO_TRY_STATUS(ctx_.comm->broadcast(next, 0));
  next_auto_save_ = next.item<std::int64_t>();
  return core::ok_status();
}

void TrainingRun::setup() {
  const TrainerConfig& cfg = ctx_.cfg;
  const kernels::Ops& ops = kernels::ops_for(kernels::parse_backend(cfg.kernels).value());
  at::TensorOptions opts = at::TensorOptions().dtype(at::kFloat);
  if (cfg.device == "cuda") opts = opts.device(compat::cuda_device(boot_->world().local_rank));
  // Every rank draws the same initial weights (and rank 0's are broadcast anyway).
  at::Generator init_gen = compat::make_cpu_generator(static_cast<std::uint64_t>(cfg.seed));
  ExpertShard shard;
  if (ctx_.par.ep) {
    const auto [first, last] = ctx_.par.local_experts(ctx_.spec.num_experts);
    shard = ExpertShard{first, last, ctx_.par.ep.get()};
  }
  shard.tensor_parallel = ctx_.par.expert_tp();
  state_.model =
      std::make_shared<QwenModel>(ctx_.spec, ops, opts, &init_gen, shard, ctx_.par.tensor_shard());
  // Under PP every rank keeps every layer (the rollout's weights, share_stage_weights) but trains
  // and holds optimizer states for its stage's only.
  NamedTensors trained;
  const ShardingPlan& plan = sharding_plan(ctx_, *state_.model);
  for (auto& [name, p] : state_.model->named_params()) {
    if (plan.stage_of(name) == ctx_.par.stage()) {
      trained.emplace_back(name, p);
    } else {
      p.requires_grad_(false);
    }
  }
  // Mixed precision: the weights drawn in fp32 become the masters and the model is rounded to
  // bf16, so a bf16 run starts from the fp32 run's weights.
  std::vector<at::Tensor> masters;
  if (cfg.mixed_precision()) {
    for (const auto& [name, p] : trained) masters.push_back(p.detach().clone());
    state_.model->to(at::kBFloat16);
  }
  state_.optim = std::make_unique<AdamW>(std::move(trained), std::move(masters));
  if (whole_model_rollout(ctx_)) state_.rollout = make_rollout_model(ctx_, *state_.model);
  state_.sample_gen = compat::make_cpu_generator(sampling_seed(cfg.seed, ctx_.par.data_rank()));
}

core::Status TrainingRun::start_tensorboard() {
  if (ctx_.rank != 0 || !ctx_.cfg.logs_to_tensorboard()) return core::ok_status();
  GRPO_TRY(TensorBoardLog log, TensorBoardLog::open(run_dir_, ctx_.cfg.task, ctx_.world));
  tensorboard_ = std::make_unique<TensorBoardLog>(std::move(log));
  spdlog::info("TensorBoard: {}", tensorboard_->path().string());
  ctx_.tel.set_observer([this](std::string_view type, const nlohmann::json& fields) {
    if (tensorboard_failed_) return;
    if (core::Status st = tensorboard_->observe(type, fields); !st.ok()) {
      // Training goes on: the metrics are still in the telemetry stream.
      tensorboard_failed_ = true;
      spdlog::warn("TensorBoard logging stopped: {}", st.error().message);
    }
  });
  return core::ok_status();
}

int TrainingRun::fail(const core::Error& e) {
  const int code = exit_code_for(e);
  const char* name = code == kExitComm ? core::telemetry::event::kCommError
                     : code == kExitIo ? core::telemetry::event::kIoError
                                       : core::telemetry::event::kInternalError;
  spdlog::error("step {} ({}): {}", state_.step + 1, ctx_.phase, e.message);
  ctx_.tel.emit(name, {{"step", state_.step + 1},
                       {"phase", ctx_.phase},
                       {"message", e.message},
                       {"exit_code", code},
                       {"no_space", e.kind == core::ErrorKind::kNoSpace}});
  return code;
}

void TrainingRun::report_step(std::int64_t s, bool sft, const StepMetrics& m) {
  ctx_.tel.emit(core::telemetry::event::kStep, m.fields);
  if (ctx_.rank != 0) return;
  const std::int64_t total = ctx_.cfg.total_steps();
  const std::string val =
      m.fields.contains("val_reward")
          ? fmt::format(" val_reward {:.4f}", m.fields.at("val_reward").get<double>())
          : "";
  if (sft) {
    spdlog::info("step {}/{} sft loss {:.4f} ({:.3f} s){}", s, total,
                 m.fields.value("sft_loss", 0.0), m.fields.value("step_s", 0.0), val);
  } else {
    spdlog::info(
        "step {}/{} grpo reward {:.4f} loss {:.4f} kl {:.5f} entropy {:.3f} clip {:.3f} "
        "gnorm {:.3f} {:.0f} tok/s{}",
        s, total, m.fields.value("reward_mean", 0.0), m.fields.value("loss", 0.0),
        m.fields.value("kl", 0.0), m.fields.value("entropy", 0.0), m.fields.value("clip_frac", 0.0),
        m.fields.value("grad_norm", 0.0), m.fields.value("tokens_per_s", 0.0), val);
  }
}

void TrainingRun::emit_layout() {
  const TrainerConfig& cfg = ctx_.cfg;
  const core::ParallelDims& d = ctx_.par.dims;
  // What this rank trains, in bytes: the planner's per-device memory items (bench/layouts). Under
  // PP the other stages' layers are the rollout's weights (rollout_param_bytes).
  auto bytes_of = [](const NamedTensors& tensors) {
    std::int64_t n = 0;
    for (const auto& [name, t] : tensors) n += static_cast<std::int64_t>(t.nbytes());
    return n;
  };
  const std::int64_t param_bytes = bytes_of(state_.optim->params());
  // Gradients are fp32 in both precisions (the main gradients under mixed precision); the
  // optimizer holds the moments and, under mixed precision, the fp32 master weights.
  const std::int64_t grad_bytes = bytes_of(state_.optim->weights());
  const std::int64_t optimizer_bytes =
      bytes_of(state_.optim->state()) + state_.optim->master_bytes();
  nlohmann::json fields = core::dims_to_json(d);
  fields.update(
      nlohmann::json{{"sequence_parallel", ctx_.par.sequence_parallel},
                     {"rollout_tp", cfg.rollout_tensor_model_parallel_size},
                     {"rollout_layout", state_.rollout ? "whole" : "training"},
                     {"experts_per_rank", ctx_.spec.is_moe() ? ctx_.spec.num_experts / d.ep : 0},
                     {"token_exchange", d.ep > 1 ? "all-to-all" : "none"},
                     {"param_bytes", param_bytes},
                     {"dtype", state_.optim->mixed_precision() ? "bfloat16" : "float32"},
                     {"grad_bytes", grad_bytes},
                     {"optimizer_bytes", optimizer_bytes}});
  if (d.pp > 1) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& [first, end] : ctx_.par.stages) stages.push_back({first, end});
    fields["stage"] = ctx_.par.stage();
    fields["stage_layers"] = stages;
    fields["schedule"] = "1f1b";
    fields["rollout_param_bytes"] = bytes_of(state_.model->named_params());
  }
  if (state_.rollout) fields["rollout_param_bytes"] = bytes_of(state_.rollout->named_params());
  // What this rank keeps for generation beyond the parameters it trains (the planner's "rollout
  // weights (kept)"): the other stages' layers under PP and the whole-model copy.
  fields["rollout_kept_bytes"] = bytes_of(state_.model->named_params()) - param_bytes +
                                 (state_.rollout ? bytes_of(state_.rollout->named_params()) : 0);
  ctx_.tel.emit(core::telemetry::event::kLayout, fields);
}

namespace {

// What the collectives moved since `before`, per key (docs/telemetry.md's comm_bytes).
nlohmann::json comm_bytes_since(const std::map<std::string, std::int64_t>& before,
                                const std::map<std::string, std::int64_t>& now) {
  nlohmann::json comm_bytes = nlohmann::json::object();
  for (const auto& [key, sum] : now) {
    const auto it = before.find(key);
    const std::int64_t n = sum - (it == before.end() ? 0 : it->second);
    if (n > 0) comm_bytes[key] = n;
  }
  return comm_bytes;
}

// A failed resume is reported as such (a checkpoint error, or a comm error where a collective
// failed) rather than as a failed step.
int resume_failed(Telemetry& tel, const core::Error& e) {
  spdlog::error("resume failed: {}", e.message);
  tel.emit(core::telemetry::event::kError,
           {{"code", e.kind == ErrorKind::kUnavailable ? core::telemetry::error_code::kComm
                                                       : core::telemetry::error_code::kCheckpoint},
            {"message", e.message}});
  return exit_code_for(e);
}

}  // namespace

core::Status TrainingRun::form_layout() {
  const TrainerConfig& cfg = ctx_.cfg;
  const bootstrap::WorldInfo& world = boot_->world();
  GRPO_TRY(auto stages, pipeline_stages(cfg, ctx_.spec.num_layers));
  GRPO_TRY(ctx_.par,
           make_parallel_state(*ctx_.comm, dims_from_config(cfg, ctx_.world),
                               world.world_size > 1 ? world.local_world_size : 1,
                               world.world_size > 1 ? world.local_rank : 0, std::move(stages)));
  ctx_.par.sequence_parallel = cfg.sequence_parallel && ctx_.par.dims.tp > 1;
  spdlog::info("layout {}{}", ctx_.par.describe(),
               ctx_.par.ep ? fmt::format(", experts {}..{} on this rank",
                                         ctx_.par.local_experts(ctx_.spec.num_experts).first,
                                         ctx_.par.local_experts(ctx_.spec.num_experts).second - 1)
                           : "");
  return core::ok_status();
}

core::Status TrainingRun::run_step(std::int64_t s) {
  const TrainerConfig& cfg = ctx_.cfg;
  const bool sft = s <= cfg.sft_warmup_steps;
  ctx_.enter_phase(s, "start");
  ctx_.fire_step_faults(s, "start", *state_.model);
  const auto t0 = std::chrono::steady_clock::now();
  if (!sft && !state_.grpo_started) GRPO_TRY_STATUS(start_grpo(ctx_, state_));
  const auto step_t0 = std::chrono::steady_clock::now();
  const double comm_t0 = ctx_.comm->seconds();
  const std::map<std::string, std::int64_t> bytes_t0 = ctx_.comm->bytes();
  // An injected straggler is slow inside the step, as a slow rank's compute would be.
  if (const std::int64_t ms = ctx_.faults.slow_ms(s); ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  StepMetrics m;
  GRPO_TRY_STATUS(sft ? sft_step(ctx_, state_, s, m) : grpo_step(ctx_, state_, s, m));
  const double step_s = seconds_since(step_t0);
  const double step_comm_s = ctx_.comm->seconds() - comm_t0;
  // The step's own collectives, like step_s and comm_s: validation below is not counted.
  nlohmann::json comm_bytes = comm_bytes_since(bytes_t0, ctx_.comm->bytes());
  state_.step = s;

  std::optional<double> val;
  const bool periodic = cfg.test_freq > 0 && s % cfg.test_freq == 0;
  if (periodic || s == cfg.total_steps()) {
    GRPO_TRY(val, validation_phase(ctx_, state_, s));
  }
  m.fields["step"] = s;
  m.fields["phase"] = sft ? "sft" : "grpo";
  m.fields["grpo_step"] = sft ? 0 : s - cfg.sft_warmup_steps;
  m.fields["tokens"] = m.tokens;
  m.fields["step_s"] = step_s;
  m.fields["comm_s"] = step_comm_s;
  m.fields["comm_bytes"] = std::move(comm_bytes);
  m.fields["tokens_per_s"] = step_s > 0 ? static_cast<double>(m.tokens) / step_s : 0.0;
  m.fields["wall_s"] = seconds_since(t0);
  recent_step_s_.push_back(m.fields["wall_s"].get<double>());
  if (recent_step_s_.size() > kRecentSteps) recent_step_s_.pop_front();
  m.fields["peak_rss_mib"] = static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0);
  m.fields["data_cursor"] = state_.data_cursor;
  if (val) m.fields["val_reward"] = *val;
  if (cfg.checksum_freq > 0 && s % cfg.checksum_freq == 0) {
    GRPO_TRY(const std::string sha, full_weights_sha256(ctx_, state_));
    m.fields["weights_sha256"] = sha;
  }
  report_step(s, sft, m);
  return core::ok_status();
}

core::Result<bool> TrainingRun::save_if_due(std::int64_t s) {
  const TrainerConfig& cfg = ctx_.cfg;
  const std::int64_t total = cfg.total_steps();
  const bool auto_freq = cfg.save_freq == kSaveFreqAuto;
  // Checkpoint and stop requests, agreed by all ranks once per step.
  GRPO_TRY(const ControlRequests requests, agree_on_control_requests(*ctx_.comm, run_dir_));
  const bool want_ckpt = requests.checkpoint;
  const bool want_stop = requests.stop;
  const bool periodic_ckpt = auto_freq ? next_auto_save_ == 0 || s >= next_auto_save_
                                       : cfg.save_freq > 0 && s % cfg.save_freq == 0;
  if (periodic_ckpt || s == total || want_ckpt || want_stop) {
    const std::string reason = s == total  ? "final"
                               : want_stop ? "stop"
                               : want_ckpt ? "request"
                                           : "periodic";
    GRPO_TRY(const double blocked, checkpoints_.save(state_, s, reason));
    if (want_ckpt) acknowledge_checkpoint_request(run_dir_, ctx_.rank);
    if (auto_freq && s < total && !want_stop) {
      const bool full_cost = !cfg.async_save || reason != "periodic";
      GRPO_TRY_STATUS(choose_save_interval(s, blocked, full_cost));
    }
  }
  return want_stop;
}

int TrainingRun::stop_on_request(std::int64_t s) {
  acknowledge_stop_request(run_dir_, ctx_.rank);
  spdlog::warn("stopping at step {} on request (checkpoint written)", s);
  ctx_.tel.emit(core::telemetry::event::kStopped, {{"step", s}, {"exit_code", kExitStopped}});
  return kExitStopped;
}

int TrainingRun::finish() {
  // The final checkpoint is written synchronously; this only reports an earlier one's outcome.
  if (core::Status st = checkpoints_.wait(); !st.ok()) return fail(st.error());
  auto final_sha = full_weights_sha256(ctx_, state_);
  if (!final_sha.ok()) return fail(final_sha.error());
  const std::string& sha = *final_sha;
  spdlog::info("training done at step {}; weights sha256 {}", state_.step, sha);
  ctx_.tel.emit(core::telemetry::event::kDone,
                {{"step", state_.step}, {"weights_sha256", sha}, {"exit_code", kExitOk}});
  return kExitOk;
}

int TrainingRun::run() {
  if (core::Status st = form_layout(); !st.ok()) return fail(st.error());
  setup();
  emit_layout();
  if (core::Status st = start_tensorboard(); !st.ok()) return fail(st.error());
  if (core::Status st = checkpoints_.resume(state_); !st.ok()) {
    return resume_failed(ctx_.tel, st.error());
  }
  const std::int64_t total = ctx_.cfg.total_steps();
  if (ctx_.cfg.save_freq == kSaveFreqAuto && ctx_.rank == 0 && state_.step < total) {
    ctx_.tel.emit(core::telemetry::event::kSaveInterval,
                  {{"step", state_.step},
                   {"interval_steps", 1},
                   {"next_save_step", state_.step + 1},
                   {"why", "the attempt's first step is saved: it measures the checkpoint cost"}});
  }
  while (state_.step < total) {
    const std::int64_t s = state_.step + 1;
    if (core::Status st = run_step(s); !st.ok()) return fail(st.error());
    auto stop = save_if_due(s);
    if (!stop.ok()) return fail(stop.error());
    ctx_.fire_step_faults(s, "checkpoint", *state_.model);
    if (*stop && s < total) return stop_on_request(s);
  }
  return finish();
}

}  // namespace grpo::trainer
