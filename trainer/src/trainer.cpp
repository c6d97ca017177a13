// The training loop: setup, SFT warm-start, GRPO steps, validation, checkpoints, resume,
// telemetry, signals and fault injection. Collectives are issued in the same order on every rank.
#include "grpo/trainer/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <new>
#include <optional>
#include <regex>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "grpo/bootstrap/bootstrap.h"
#include "grpo/core/catalog.h"
#include "grpo/io/files.h"
#include "grpo/trainer/checkpoint_store.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/faults.h"
#include "grpo/trainer/grpo.h"
#include "grpo/trainer/model.h"
#include "grpo/trainer/model_source.h"
#include "grpo/trainer/rollout.h"
#include "grpo/trainer/sha256.h"
#include "grpo/trainer/system_info.h"
#include "grpo/trainer/tasks.h"
#include "grpo/trainer/telemetry.h"
#include "grpo/trainer/tensor_io.h"
#include "grpo/trainer/torch_compat.h"
#include "grpo/trainer/version.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using core::Status;
using json = nlohmann::json;

namespace {

// ---- signals: async-signal-safe flags, agreed across ranks once per step ----
volatile std::sig_atomic_t g_checkpoint_signal = 0;
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_checkpoint_signal(int) {
  g_checkpoint_signal = 1;
}
extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) _exit(128 + sig);  // a second SIGTERM/SIGINT: leave at once
  g_stop_signal = 1;
}

void install_signal_handlers() {
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_checkpoint_signal;
  sigaction(SIGUSR2, &sa, nullptr);
  sa.sa_handler = on_stop_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// An error that ends the run with a specific exit code (thrown only inside this file and caught
// in run_trainer: the edge).
struct ExitRequest {
  int code;
  std::string message;
};

int exit_code_for(const core::Error& e) {
  switch (e.kind) {
    case ErrorKind::kUnavailable:
      return kExitComm;
    case ErrorKind::kIo:
      return kExitIo;
    case ErrorKind::kParse:
    case ErrorKind::kInvalidValue:
    case ErrorKind::kWrongType:
    case ErrorKind::kUnknownKey:
    case ErrorKind::kMissingKey:
    case ErrorKind::kNotFound:
    case ErrorKind::kCycle:
      return kExitUsage;
    default:
      return kExitInternal;
  }
}

std::optional<std::int64_t> requested_bytes(const std::string& msg) {
  static const std::regex cpu(R"(allocate (\d+) bytes)");
  static const std::regex cuda(R"(Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB))");
  std::smatch m;
  if (std::regex_search(msg, m, cpu)) return std::stoll(m[1].str());
  if (std::regex_search(msg, m, cuda)) {
    double v = std::stod(m[1].str());
    const std::string unit = m[2].str();
    const double scale = unit == "KiB"   ? 1024.0
                         : unit == "MiB" ? 1024.0 * 1024
                         : unit == "GiB" ? 1024.0 * 1024 * 1024
                         : unit == "TiB" ? 1024.0 * 1024 * 1024 * 1024
                                         : 1.0;
    return static_cast<std::int64_t>(v * scale);
  }
  return std::nullopt;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Neither PMIx nor the torchrun environment: a world of one (running grpo-trainer by hand).
class StandaloneBootstrap final : public bootstrap::Bootstrap {
 public:
  StandaloneBootstrap() {
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) world_.hostname = host;
  }
  const bootstrap::WorldInfo& world() const override { return world_; }
  core::Result<bootstrap::Endpoint> exchange_rendezvous(
      std::optional<bootstrap::Endpoint> mine) override {
    return mine.value_or(bootstrap::Endpoint{});
  }
  core::Status barrier() override { return core::ok_status(); }

 private:
  bootstrap::WorldInfo world_;
};

core::Result<std::unique_ptr<bootstrap::Bootstrap>> make_bootstrap() {
  if (std::getenv("PMIX_NAMESPACE") == nullptr && std::getenv("WORLD_SIZE") == nullptr &&
      std::getenv("RANK") == nullptr) {
    return std::unique_ptr<bootstrap::Bootstrap>(std::make_unique<StandaloneBootstrap>());
  }
  return bootstrap::Bootstrap::create();
}

struct StepMetrics {
  json fields = json::object();
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
  core::Result<std::map<std::string, double>> reduce(Communicator& comm) const {
    std::vector<double> flat;
    for (const auto& [k, vw] : sums_) {
      flat.push_back(vw.first);
      flat.push_back(vw.second);
    }
    at::Tensor t = at::tensor(flat, at::kDouble);
    if (!flat.empty()) GRPO_TRY_STATUS(comm.allreduce_sum(t));
    std::map<std::string, double> out;
    std::size_t i = 0;
    for (const auto& [k, vw] : sums_) {
      const double v = t[static_cast<std::int64_t>(i)].item<double>();
      const double w = t[static_cast<std::int64_t>(i + 1)].item<double>();
      out[k] = w > 0 ? v / w : 0.0;
      i += 2;
    }
    return out;
  }

 private:
  std::map<std::string, std::pair<double, double>> sums_;
};

class Trainer {
 public:
  Trainer(TrainerConfig cfg, core::ModelSpec spec, TrainerOptions options,
          std::unique_ptr<bootstrap::Bootstrap> boot, std::unique_ptr<Communicator> comm,
          Telemetry& telemetry, FaultInjector faults)
      : cfg_(std::move(cfg)),
        spec_(std::move(spec)),
        options_(std::move(options)),
        boot_(std::move(boot)),
        comm_(std::move(comm)),
        tel_(telemetry),
        faults_(std::move(faults)),
        store_(options_.run_dir / "checkpoints"),
        rank_(comm_->rank()),
        world_(comm_->world_size()) {
    auto t = std::make_unique<TimedCommunicator>(std::move(comm_));
    timed_comm_ = t.get();
    comm_ = std::move(t);
  }

  int run();
  const std::string& phase() const { return phase_; }
  std::int64_t current_step() const { return step_ + 1; }

 private:
  void setup();
  Status resume();
  Status sft_step(std::int64_t s, StepMetrics& m);
  Status grpo_step(std::int64_t s, StepMetrics& m);
  Status start_grpo();
  core::Result<double> validate(std::int64_t s);
  Status save_checkpoint(std::int64_t s, const std::string& reason);
  Status optimizer_step(double lr, MeanAccumulator& acc);
  void fire_step_faults(std::int64_t s, const std::string& phase);
  void enter_phase(std::int64_t s, const std::string& phase);
  std::vector<const Example*> take_examples(std::int64_t global_count);
  std::string weights_sha256() const { return tensors_sha256(model_->named_params()); }
  Status broadcast_bytes(std::string& bytes, int root);
  json expert_load_events(std::int64_t s, std::vector<ExpertLoad> load);
  void check_control(bool& checkpoint, bool& stop);

  TrainerConfig cfg_;
  core::ModelSpec spec_;
  TrainerOptions options_;
  std::unique_ptr<bootstrap::Bootstrap> boot_;
  std::unique_ptr<Communicator> comm_;
  TimedCommunicator* timed_comm_ = nullptr;  // comm_ itself: time inside collectives
  Telemetry& tel_;
  FaultInjector faults_;
  CheckpointStore store_;
  int rank_;
  int world_;

  std::unique_ptr<Task> task_;
  Splits splits_;
  std::shared_ptr<QwenModel> model_;
  std::shared_ptr<QwenModel> ref_;  // frozen reference, created when GRPO starts
  std::unique_ptr<AdamW> optim_;
  at::Generator sample_gen_;

  // Resumable state.
  std::int64_t step_ = 0;         // completed steps (SFT and GRPO)
  std::int64_t data_cursor_ = 0;  // train examples consumed, all ranks together
  bool grpo_started_ = false;

  std::string phase_ = "setup";
  std::int64_t last_saved_step_ = -1;
};

void Trainer::enter_phase(std::int64_t s, const std::string& phase) {
  phase_ = phase;
  tel_.heartbeat(s, phase);
}

void Trainer::fire_step_faults(std::int64_t s, const std::string& phase) {
  if (faults_.empty()) return;
  auto announce = [&](const Fault& f) {
    tel_.emit("fault_injected", {{"fault", f.text}, {"step", s}, {"phase", phase}});
    spdlog::warn("fault injection: {} at step {} ({})", f.text, s, phase);
  };
  if (auto f = faults_.take(FaultKind::kCrash, s, phase)) {
    announce(*f);
    std::fflush(nullptr);
    _exit(kExitInjectedCrash);
  }
  if (auto f = faults_.take(FaultKind::kSigkill, s, phase)) {
    announce(*f);
    std::fflush(nullptr);
    ::raise(SIGKILL);
  }
  if (auto f = faults_.take(FaultKind::kSigstop, s, phase)) {
    announce(*f);
    std::fflush(nullptr);
    ::raise(SIGSTOP);  // until SIGCONT or SIGKILL (the supervisor's, after the hang timeout)
  }
  if (auto f = faults_.take(FaultKind::kAbort, s, phase)) {
    announce(*f);
    std::fflush(nullptr);
    std::abort();
  }
  if (auto f = faults_.take(FaultKind::kExit, s, phase)) {
    announce(*f);
    std::fflush(nullptr);
    throw ExitRequest{f->code, "fault injection: exit"};
  }
  if (auto f = faults_.take(FaultKind::kHang, s, phase)) {
    announce(*f);
    tel_.set_muted(true);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(f->seconds > 0 ? f->seconds : 1e9);
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    tel_.set_muted(false);
  }
  if (auto f = faults_.take(FaultKind::kOom, s, phase)) {
    announce(*f);
    // A real allocation through LibTorch's allocator: 2^42 floats (16 TiB) fails in
    // posix_memalign and surfaces as c10::Error, exactly as a genuine OOM does.
    at::Tensor huge = at::empty({std::int64_t{1} << 42}, at::kFloat);
    huge.fill_(0);
  }
  if (auto f = faults_.take(FaultKind::kBadAlloc, s, phase)) {
    announce(*f);
    std::vector<char> huge;
    huge.reserve(std::size_t{1} << 46);  // throws std::bad_alloc (or length_error)
  }
  if (auto f = faults_.take(FaultKind::kImbalance, s, phase)) {
    announce(*f);
    model_->set_router_bias_fault(50.0);
  }
}

std::vector<const Example*> Trainer::take_examples(std::int64_t global_count) {
  // Global positions [cursor, cursor + count) of the epoch-shuffled train split; this rank takes
  // its contiguous share, so a prompt (and its whole group) belongs to exactly one rank.
  const auto n = static_cast<std::int64_t>(splits_.train.size());
  const std::int64_t per_rank = global_count / world_;
  std::vector<const Example*> out;
  std::int64_t cached_epoch = -1;
  std::vector<std::int64_t> order;
  for (std::int64_t i = rank_ * per_rank; i < (rank_ + 1) * per_rank; ++i) {
    const std::int64_t pos = data_cursor_ + i;
    const std::int64_t epoch = pos / n;
    if (epoch != cached_epoch) {
      order = epoch_order(static_cast<std::uint64_t>(cfg_.data_seed), epoch, n);
      cached_epoch = epoch;
    }
    out.push_back(
        &splits_.train[static_cast<std::size_t>(order[static_cast<std::size_t>(pos % n)])]);
  }
  data_cursor_ += global_count;
  return out;
}

std::vector<std::int64_t> prompt_ids(const Example& e) {
  std::vector<std::int64_t> ids{Tokenizer::kBos};
  auto enc = Tokenizer::encode(e.prompt);
  ids.insert(ids.end(), enc->begin(), enc->end());
  return ids;
}

void Trainer::setup() {
  auto task = make_task(cfg_.task);
  task_ = std::move(task).value();
  splits_ = make_splits(*task_, static_cast<std::uint64_t>(cfg_.data_seed), cfg_.train_size,
                        cfg_.val_size, cfg_.task_min_len, cfg_.task_max_len);
  const kernels::Ops& ops = kernels::ops_for(kernels::parse_backend(cfg_.kernels).value());
  at::TensorOptions opts = at::TensorOptions().dtype(at::kFloat);
  if (cfg_.device == "cuda") opts = opts.device(at::kCUDA);
  // Every rank draws the same initial weights (and rank 0's are broadcast anyway).
  at::Generator init_gen = compat::make_cpu_generator(static_cast<std::uint64_t>(cfg_.seed));
  model_ = std::make_shared<QwenModel>(spec_, ops, opts, &init_gen);
  optim_ = std::make_unique<AdamW>(model_->named_params());
  // Each rank samples from its own stream.
  sample_gen_ = compat::make_cpu_generator(static_cast<std::uint64_t>(cfg_.seed) * 1000003ULL +
                                           static_cast<std::uint64_t>(rank_) + 1);
}

Status Trainer::broadcast_bytes(std::string& bytes, int root) {
  at::Tensor len = at::tensor({static_cast<std::int64_t>(bytes.size())}, at::kLong);
  GRPO_TRY_STATUS(comm_->broadcast(len, root));
  const std::int64_t n = len.item<std::int64_t>();
  at::Tensor buf = at::zeros({std::max<std::int64_t>(n, 1)}, at::kByte);
  if (rank_ == root && n > 0)
    std::memcpy(buf.data_ptr(), bytes.data(), static_cast<std::size_t>(n));
  GRPO_TRY_STATUS(comm_->broadcast(buf, root));
  bytes.assign(static_cast<const char*>(buf.data_ptr()), static_cast<std::size_t>(n));
  return core::ok_status();
}

Status Trainer::resume() {
  // Rank 0 picks the checkpoint and reads it; everything reaches the other ranks by broadcast,
  // so only rank 0 needs to see the run directory.
  std::string state_text;  // trainer_state.json
  std::string blob_model, blob_optim, blob_ref, blob_rng;
  std::string found_path;
  if (rank_ == 0) {
    store_.remove_temporaries();
    std::optional<CheckpointInfo> info;
    if (cfg_.resume_mode == "auto") {
      std::vector<SkippedCheckpoint> skipped;
      info = store_.find_latest_valid(&skipped);
      for (const auto& s : skipped) {
        spdlog::warn("skipping checkpoint {}: {}", s.path, s.reason);
        tel_.emit("checkpoint_skipped", {{"path", s.path}, {"reason", s.reason}});
      }
    } else if (cfg_.resume_mode == "resume_path") {
      auto v = store_.verify(cfg_.resume_from_path);
      if (!v.ok()) {
        return make_error(ErrorKind::kIo, "checkpoint " + cfg_.resume_from_path +
                                              " does not verify: " + v.error().message);
      }
      info = std::move(v).value();
    }
    if (info) {
      found_path = info->dir.string();
      auto rd = [&](const char* name, std::string& out) -> Status {
        GRPO_TRY(out, store_.read(info->dir, name));
        return core::ok_status();
      };
      GRPO_TRY_STATUS(rd("trainer_state.json", state_text));
      GRPO_TRY_STATUS(rd("model.safetensors", blob_model));
      GRPO_TRY_STATUS(rd("optimizer.safetensors", blob_optim));
      GRPO_TRY_STATUS(rd("rng.safetensors", blob_rng));
      if (info->manifest["files"].contains("reference.safetensors")) {
        GRPO_TRY_STATUS(rd("reference.safetensors", blob_ref));
      }
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  GRPO_TRY_STATUS(broadcast_bytes(state_text, 0));
  if (state_text.empty()) {
    spdlog::info("starting from scratch (no checkpoint to resume)");
    // Identical initial weights on every rank, whatever happened before.
    for (auto& [name, p] : model_->named_params()) {
      torch::NoGradGuard ng;
      GRPO_TRY_STATUS(comm_->broadcast(p, 0));
    }
    return core::ok_status();
  }
  GRPO_TRY_STATUS(broadcast_bytes(found_path, 0));
  json st = json::parse(state_text);
  const int saved_world = st.at("world_size").get<int>();

  torch::NoGradGuard no_grad;
  auto load_into = [&](const std::string& blob, const NamedTensors& dst,
                       const std::string& prefix) -> Status {
    NamedTensors src;
    if (rank_ == 0) {
      GRPO_TRY(src, from_safetensors(blob));
    }
    std::map<std::string, at::Tensor> by_name(src.begin(), src.end());
    for (const auto& [name, t] : dst) {
      at::Tensor target = t;
      if (rank_ == 0) {
        auto it = by_name.find(prefix + name);
        if (it == by_name.end() || !it->second.sizes().equals(t.sizes())) {
          return make_error(ErrorKind::kInvalidValue,
                            "checkpoint lacks or mismatches tensor " + prefix + name);
        }
        target.copy_(it->second);
      }
      GRPO_TRY_STATUS(comm_->broadcast(target, 0));
    }
    return core::ok_status();
  };
  GRPO_TRY_STATUS(load_into(blob_model, model_->named_params(), ""));
  GRPO_TRY_STATUS(load_into(blob_optim, optim_->state(), ""));  // state() aliases the moments
  optim_->set_steps(st.at("optimizer_steps").get<std::int64_t>());
  grpo_started_ = st.at("grpo_started").get<bool>();
  if (grpo_started_) {
    ref_ = std::make_shared<QwenModel>(spec_, model_->ops(), model_->lm_head_weight().options(),
                                       nullptr);
    GRPO_TRY_STATUS(load_into(blob_ref, ref_->named_params(), ""));
    for (auto& [n, p] : ref_->named_params()) p.set_requires_grad(false);
  }
  step_ = st.at("step").get<std::int64_t>();
  data_cursor_ = st.at("data_cursor").get<std::int64_t>();

  // RNG: this rank's own stream when the world is unchanged, else a fresh stream per rank.
  NamedTensors rngs;
  if (rank_ == 0) {
    GRPO_TRY(rngs, from_safetensors(blob_rng));
  }
  const bool resharded = saved_world != world_;
  if (!resharded) {
    at::Tensor mine = compat::generator_state(sample_gen_);
    for (int r = 0; r < world_; ++r) {
      at::Tensor buf =
          rank_ == 0 ? rngs[static_cast<std::size_t>(r)].second.clone() : at::zeros_like(mine);
      GRPO_TRY_STATUS(comm_->broadcast(buf, 0));
      if (r == rank_) compat::set_generator_state(sample_gen_, buf);
    }
  } else {
    sample_gen_ = compat::make_cpu_generator(static_cast<std::uint64_t>(cfg_.seed) * 1000003ULL +
                                             static_cast<std::uint64_t>(rank_) + 1 +
                                             static_cast<std::uint64_t>(step_) * 7919ULL);
    spdlog::warn(
        "resuming a checkpoint written by {} rank(s) on {} rank(s): the model is replicated, "
        "the data cursor is global, sampling streams are re-seeded (not bit-exact)",
        saved_world, world_);
  }
  const double secs = seconds_since(t0);
  spdlog::info("resumed from {} at step {} ({:.3f} s)", found_path, step_, secs);
  tel_.emit("checkpoint_loaded", {{"step", step_},
                                  {"path", found_path},
                                  {"seconds", secs},
                                  {"saved_world_size", saved_world},
                                  {"resharded", resharded},
                                  {"weights_sha256", weights_sha256()}});
  last_saved_step_ = step_;
  return core::ok_status();
}

Status Trainer::save_checkpoint(std::int64_t s, const std::string& reason) {
  enter_phase(s, "checkpoint");
  const auto t0 = std::chrono::steady_clock::now();
  // Gather every rank's sampling RNG state at rank 0 (rows of zeros elsewhere, summed).
  at::Tensor mine = compat::generator_state(sample_gen_);
  at::Tensor all = at::zeros({world_, mine.numel()}, at::kByte);
  all[rank_].copy_(mine);
  GRPO_TRY_STATUS(comm_->allreduce_sum(all));

  at::Tensor status = at::zeros({1}, at::kLong);
  std::string path_text;
  std::int64_t bytes = 0;
  std::string message;
  const std::string sha = weights_sha256();
  if (rank_ == 0) {
    auto write = [&]() -> core::Result<fs::path> {
      GRPO_TRY(CheckpointWriter w, store_.begin(s));
      const std::string model_bytes = to_safetensors(model_->named_params());
      if (auto f = faults_.take(FaultKind::kTornCkpt, s, "checkpoint")) {
        tel_.emit("fault_injected", {{"fault", f->text}, {"step", s}, {"phase", "checkpoint"}});
        (void)write_file_synced(w.dir() / "model.safetensors",
                                std::string_view(model_bytes).substr(0, model_bytes.size() / 2));
        std::fflush(nullptr);
        _exit(kExitInjectedCrash);
      }
      GRPO_TRY_STATUS(w.write_file("model.safetensors", model_bytes));
      GRPO_TRY_STATUS(w.write_file("optimizer.safetensors", to_safetensors(optim_->state())));
      if (grpo_started_) {
        GRPO_TRY_STATUS(
            w.write_file("reference.safetensors", to_safetensors(ref_->named_params())));
      }
      NamedTensors rng;
      for (int r = 0; r < world_; ++r) rng.emplace_back("rank" + std::to_string(r), all[r].clone());
      GRPO_TRY_STATUS(w.write_file("rng.safetensors", to_safetensors(rng)));
      json st = {{"step", s},
                 {"data_cursor", data_cursor_},
                 {"grpo_started", grpo_started_},
                 {"optimizer_steps", optim_->steps()},
                 {"world_size", world_},
                 {"seed", cfg_.seed},
                 {"model", spec_.name},
                 {"torch_version", compat::torch_version()},
                 {"threads", at::get_num_threads()}};
      GRPO_TRY_STATUS(w.write_file("trainer_state.json", st.dump(2) + "\n"));
      GRPO_TRY_STATUS(w.write_file("config.toml", to_toml(cfg_)));
      json meta = {{"world_size", world_},  {"phase", grpo_started_ ? "grpo" : "sft"},
                   {"reason", reason},      {"model", spec_.name},
                   {"weights_sha256", sha}, {"trainer_version", std::string(version())}};
      GRPO_TRY(fs::path final_dir, store_.commit(std::move(w), meta, cfg_.max_ckpt_to_keep));
      if (auto f = faults_.take(FaultKind::kCorruptCkpt, s, "checkpoint")) {
        tel_.emit("fault_injected", {{"fault", f->text}, {"step", s}, {"phase", "checkpoint"}});
        // Flip bytes in the middle of the committed model file: the manifest no longer matches.
        auto data = store_.read(final_dir, "model.safetensors");
        if (data.ok() && !data->empty()) {
          std::string d = std::move(data).value();
          for (std::size_t i = d.size() / 2; i < std::min(d.size(), d.size() / 2 + 64); ++i) {
            d[i] = static_cast<char>(~d[i]);
          }
          (void)write_file_synced(final_dir / "model.safetensors", d);
        }
      }
      return final_dir;
    };
    auto result = write();
    if (result.ok()) {
      path_text = result->string();
      for (const auto& e : fs::directory_iterator(*result))
        bytes += static_cast<std::int64_t>(e.file_size());
    } else {
      status[0] = exit_code_for(result.error()) == kExitIo ? 1 : 2;
      message = result.error().message;
    }
  }
  GRPO_TRY_STATUS(comm_->broadcast(status, 0));
  if (status.item<std::int64_t>() != 0) {
    return make_error(ErrorKind::kIo,
                      rank_ == 0 ? "checkpoint failed: " + message : "rank 0 failed to checkpoint");
  }
  last_saved_step_ = s;
  if (rank_ == 0) {
    const double secs = seconds_since(t0);
    spdlog::info("checkpoint {} saved ({} bytes, {:.3f} s, {})", path_text, bytes, secs, reason);
    tel_.emit("checkpoint_saved", {{"step", s},
                                   {"path", path_text},
                                   {"bytes", bytes},
                                   {"seconds", secs},
                                   {"reason", reason},
                                   {"weights_sha256", sha}});
  }
  return core::ok_status();
}

Status Trainer::optimizer_step(double lr, MeanAccumulator& acc) {
  const auto bucket = static_cast<std::int64_t>(cfg_.bucket_mb * 1024 * 1024);
  GRPO_TRY(double norm,
           reduce_and_clip_gradients(model_->named_params(), *comm_, bucket, cfg_.grad_clip));
  acc.add("grad_norm", norm);
  if (!std::isfinite(norm)) {
    // As verl: skip the update when the gradient is not finite (same decision on every rank,
    // since the reduced gradients are identical).
    spdlog::warn("gradient norm is not finite; optimizer step skipped");
    optim_->zero_grad();
    return core::ok_status();
  }
  AdamWOptions o;
  const double warm = cfg_.lr_warmup_steps > 0
                          ? std::min(1.0, static_cast<double>(optim_->steps() + 1) /
                                              static_cast<double>(cfg_.lr_warmup_steps))
                          : 1.0;
  o.lr = lr * warm;
  o.beta1 = cfg_.betas[0];
  o.beta2 = cfg_.betas[1];
  o.weight_decay = cfg_.weight_decay;
  optim_->step(o);
  optim_->zero_grad();
  acc.add("lr", o.lr);
  return core::ok_status();
}

Status Trainer::sft_step(std::int64_t s, StepMetrics& m) {
  enter_phase(s, "sft");
  fire_step_faults(s, "sft");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<const Example*> examples = take_examples(cfg_.sft_batch_size);
  std::vector<std::vector<std::int64_t>> prompts;
  const auto rows = static_cast<std::int64_t>(examples.size());
  at::Tensor resp = at::full({rows, cfg_.max_response_length}, Tokenizer::kPad, at::kLong);
  at::Tensor resp_valid = at::zeros({rows, cfg_.max_response_length}, at::kBool);
  std::int64_t longest = 1;
  for (std::int64_t i = 0; i < rows; ++i) {
    const Example& e = *examples[static_cast<std::size_t>(i)];
    prompts.push_back(prompt_ids(e));
    auto ans = Tokenizer::encode(e.answer).value();
    ans.push_back(Tokenizer::kEos);
    for (std::size_t j = 0; j < ans.size(); ++j) {
      resp[i][static_cast<std::int64_t>(j)] = ans[j];
      resp_valid[i][static_cast<std::int64_t>(j)] = true;
    }
    longest = std::max<std::int64_t>(longest, static_cast<std::int64_t>(ans.size()));
  }
  PromptBatch pb = make_prompt_batch(prompts);
  SequenceBatch batch = make_sequence_batch(pb.tokens, pb.valid, resp.narrow(1, 0, longest),
                                            resp_valid.narrow(1, 0, longest));

  MeanAccumulator acc;
  const std::int64_t micro = cfg_.ppo_micro_batch_size_per_gpu;
  const std::int64_t total_tokens = batch.response_valid.sum().item<std::int64_t>();
  for (std::int64_t b = 0; b < rows; b += micro) {
    const std::int64_t e = std::min(rows, b + micro);
    SequenceBatch mb = batch.slice(b, e);
    ResponseStates st = response_states(*model_, mb);
    at::Tensor lp = model_->ops()
                        .token_logprobs(st.hidden, model_->lm_head_weight(), st.tokens, 1.0, false)
                        .logprobs;
    // Token-mean over the rank's whole batch: each micro batch weighs by its token share.
    const double share = static_cast<double>(lp.numel()) / static_cast<double>(total_tokens);
    at::Tensor loss = -lp.mean() + cfg_.moe_aux_loss_coef * st.aux_loss;
    (loss * share).backward();
    acc.add("sft_loss", -lp.mean().item<double>(), static_cast<double>(lp.numel()));
    if (spec_.is_moe()) acc.add("aux_loss", st.aux_loss.item<double>());
    tel_.maybe_heartbeat(s, "sft");
  }
  GRPO_TRY_STATUS(optimizer_step(cfg_.sft_lr, acc));
  GRPO_TRY(auto means, acc.reduce(*comm_));
  for (const auto& [k, v] : means) m.fields[k] = v;
  at::Tensor tok = at::tensor({batch.valid.sum().item<std::int64_t>()}, at::kLong);
  GRPO_TRY_STATUS(comm_->allreduce_sum(tok));
  m.tokens = tok.item<std::int64_t>();
  m.fields["update_s"] = seconds_since(t0);
  return core::ok_status();
}

Status Trainer::start_grpo() {
  // GRPO starts from the warm-started policy as from a base model: the reference is frozen here
  // and the optimizer starts fresh.
  ref_ = std::make_shared<QwenModel>(spec_, model_->ops(), model_->lm_head_weight().options(),
                                     nullptr);
  {
    torch::NoGradGuard ng;
    auto src = model_->named_params();
    auto dst = ref_->named_params();
    for (std::size_t i = 0; i < src.size(); ++i) {
      dst[i].second.copy_(src[i].second);
      dst[i].second.set_requires_grad(false);
    }
  }
  optim_->reset();
  grpo_started_ = true;
  spdlog::info("GRPO starts at step {} (reference policy frozen, optimizer reset)", step_);
  if (cfg_.val_before_train) {
    GRPO_TRY(double val, validate(step_));
    tel_.emit("validation", {{"step", step_}, {"val_reward", val}, {"when", "grpo_start"}});
    spdlog::info("validation at GRPO start (step {}): val_reward {:.4f}", step_, val);
  }
  return core::ok_status();
}

core::Result<double> Trainer::validate(std::int64_t s) {
  const std::string saved_phase = phase_;
  enter_phase(s, "validation");
  const auto per_rank = static_cast<std::int64_t>(splits_.val.size()) / world_;
  double sum = 0;
  const std::int64_t chunk = 256;
  SamplingParams sp;
  sp.greedy = !cfg_.val_do_sample;
  sp.temperature = cfg_.temperature;
  sp.top_p = cfg_.top_p;
  sp.top_k = cfg_.top_k;
  for (std::int64_t b = 0; b < per_rank; b += chunk) {
    const std::int64_t e = std::min(per_rank, b + chunk);
    std::vector<std::vector<std::int64_t>> prompts;
    for (std::int64_t i = b; i < e; ++i) {
      prompts.push_back(prompt_ids(splits_.val[static_cast<std::size_t>(rank_ * per_rank + i)]));
    }
    Generation g =
        generate(*model_, make_prompt_batch(prompts), cfg_.max_response_length, sp, sample_gen_,
                 cfg_.use_kv_cache, [&](std::int64_t) { tel_.maybe_heartbeat(s, "validation"); });
    for (std::int64_t i = b; i < e; ++i) {
      at::Tensor row = g.tokens[i - b];
      std::vector<std::int64_t> ids(row.data_ptr<std::int64_t>(),
                                    row.data_ptr<std::int64_t>() + row.numel());
      const Example& ex = splits_.val[static_cast<std::size_t>(rank_ * per_rank + i)];
      sum += task_->reward(ex, Tokenizer::decode(ids));
    }
  }
  at::Tensor t = at::tensor({sum, static_cast<double>(per_rank)}, at::kDouble);
  GRPO_TRY_STATUS(comm_->allreduce_sum(t));
  phase_ = saved_phase;
  return t[0].item<double>() / std::max(1.0, t[1].item<double>());
}

json Trainer::expert_load_events(std::int64_t s, std::vector<ExpertLoad> load) {
  json layers = json::array();
  for (ExpertLoad& l : load) {
    at::Tensor t = at::tensor(l.tokens_per_expert, at::kLong);
    (void)comm_->allreduce_sum(t);  // same order on every rank; errors surface at the next one
    std::vector<std::int64_t> counts(t.data_ptr<std::int64_t>(),
                                     t.data_ptr<std::int64_t>() + t.numel());
    std::int64_t total = 0, mx = 0;
    for (std::int64_t c : counts) {
      total += c;
      mx = std::max(mx, c);
    }
    const double mean = static_cast<double>(total) / static_cast<double>(counts.size());
    const double ratio = mean > 0 ? static_cast<double>(mx) / mean : 0.0;
    layers.push_back({{"layer", l.layer}, {"imbalance", ratio}});
    if (rank_ == 0) {
      tel_.emit(
          "expert_load",
          {{"step", s}, {"layer", l.layer}, {"tokens_per_expert", counts}, {"imbalance", ratio}});
      if (ratio > cfg_.expert_imbalance_threshold) {
        const auto hot = std::max_element(counts.begin(), counts.end()) - counts.begin();
        tel_.emit("EXPERT_IMBALANCE", {{"step", s},
                                       {"layer", l.layer},
                                       {"imbalance", ratio},
                                       {"threshold", cfg_.expert_imbalance_threshold},
                                       {"expert", hot},
                                       {"tokens", mx}});
        spdlog::warn("EXPERT_IMBALANCE at step {} layer {}: max/mean {:.2f} > {:.2f} (expert {})",
                     s, l.layer, ratio, cfg_.expert_imbalance_threshold, hot);
      }
    }
  }
  return layers;
}

Status Trainer::grpo_step(std::int64_t s, StepMetrics& m) {
  const std::int64_t n = cfg_.rollout_n;
  std::vector<const Example*> examples = take_examples(cfg_.train_batch_size);

  // ---- rollout ----
  enter_phase(s, "rollout");
  fire_step_faults(s, "rollout");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<std::int64_t>> prompts;
  for (const Example* e : examples) {
    for (std::int64_t k = 0; k < n; ++k) prompts.push_back(prompt_ids(*e));
  }
  PromptBatch pb = make_prompt_batch(prompts);
  SamplingParams sp{cfg_.temperature, cfg_.top_p, cfg_.top_k, false};
  Generation g = generate(*model_, pb, cfg_.max_response_length, sp, sample_gen_, cfg_.use_kv_cache,
                          [&](std::int64_t steps) {
                            tel_.maybe_heartbeat(s, "rollout", {{"decode_steps", steps}});
                          });
  const std::int64_t rows = pb.tokens.size(0);
  at::Tensor rewards = at::zeros({rows}, at::kFloat);
  for (std::int64_t i = 0; i < rows; ++i) {
    at::Tensor row = g.tokens[i];
    std::vector<std::int64_t> ids(row.data_ptr<std::int64_t>(),
                                  row.data_ptr<std::int64_t>() + row.numel());
    rewards[i] = task_->reward(*examples[static_cast<std::size_t>(i / n)], Tokenizer::decode(ids));
  }
  // Every group lives on this rank (take_examples hands out whole prompts).
  TORCH_CHECK(rows % n == 0, "a group was split across ranks");
  at::Tensor adv = group_advantages(rewards, n, cfg_.norm_adv_by_std_in_grpo);
  const double rollout_s = seconds_since(t0);

  // ---- old and reference log-probs (before any update) ----
  SequenceBatch batch = make_sequence_batch(pb.tokens, pb.valid, g.tokens, g.valid);
  const std::int64_t micro = cfg_.ppo_micro_batch_size_per_gpu;
  enter_phase(s, "old_logprob");
  t0 = std::chrono::steady_clock::now();
  model_->set_collect_expert_load(spec_.is_moe());
  at::Tensor old_lp = sequence_logprobs(*model_, batch, micro, cfg_.temperature);
  model_->set_collect_expert_load(false);
  std::vector<ExpertLoad> load = model_->take_expert_load();
  const double old_s = seconds_since(t0);
  at::Tensor ref_lp;
  double ref_s = 0;
  if (cfg_.use_kl_loss) {
    enter_phase(s, "ref_logprob");
    t0 = std::chrono::steady_clock::now();
    ref_lp = sequence_logprobs(*ref_, batch, micro, cfg_.temperature);
    ref_s = seconds_since(t0);
  }

  // ---- update: epochs x mini batches x micro batches ----
  enter_phase(s, "update");
  fire_step_faults(s, "update");
  t0 = std::chrono::steady_clock::now();
  MeanAccumulator acc;
  const std::int64_t mini_rows = cfg_.ppo_mini_batch_size * n / world_;
  kernels::PolicyLossParams lp;
  lp.clip_ratio_low = cfg_.effective_clip_low();
  lp.clip_ratio_high = cfg_.effective_clip_high();
  lp.clip_ratio_c = cfg_.clip_ratio_c;
  lp.use_kl_loss = cfg_.use_kl_loss;
  lp.kl_type = cfg_.kl_loss_type == "kl"    ? kernels::KlType::kKl
               : cfg_.kl_loss_type == "abs" ? kernels::KlType::kAbs
               : cfg_.kl_loss_type == "mse" ? kernels::KlType::kMse
                                            : kernels::KlType::kLowVarKl;
  lp.kl_loss_coef = cfg_.kl_loss_coef;
  lp.entropy_coeff = cfg_.entropy_coeff;
  lp.temperature = cfg_.temperature;
  at::Tensor adv_tok = adv.unsqueeze(1).expand({rows, g.tokens.size(1)}).contiguous();
  for (std::int64_t epoch = 0; epoch < cfg_.ppo_epochs; ++epoch) {
    for (std::int64_t mb0 = 0; mb0 < rows; mb0 += mini_rows) {
      const std::int64_t mb1 = std::min(rows, mb0 + mini_rows);
      for (std::int64_t b = mb0; b < mb1; b += micro) {
        const std::int64_t e = std::min(mb1, b + micro);
        SequenceBatch mbatch = batch.slice(b, e);
        ResponseStates st = response_states(*model_, mbatch);
        if (st.tokens.numel() == 0) continue;
        kernels::PolicyLossInputs in;
        in.tokens = st.tokens;
        in.old_logprobs = old_lp.narrow(0, b, e - b).reshape({-1}).index_select(0, st.index);
        if (cfg_.use_kl_loss) {
          in.ref_logprobs = ref_lp.narrow(0, b, e - b).reshape({-1}).index_select(0, st.index);
        }
        in.advantages = adv_tok.narrow(0, b, e - b).reshape({-1}).index_select(0, st.index);
        kernels::PolicyLossOutputs out =
            model_->ops().policy_loss(st.hidden, model_->lm_head_weight(), in, lp);
        at::Tensor loss = out.loss;
        if (spec_.is_moe()) loss = loss + cfg_.moe_aux_loss_coef * st.aux_loss;
        // Gradient accumulation: each micro batch weighs by its share of the mini batch's rows.
        const double share = static_cast<double>(e - b) / static_cast<double>(mb1 - mb0);
        (loss * share).backward();
        acc.add("loss", loss.item<double>());
        acc.add("pg_loss", out.pg_loss.item<double>());
        acc.add("kl", out.kl.item<double>());
        acc.add("entropy", out.entropy.item<double>());
        acc.add("clip_frac", out.clip_frac.item<double>());
        if (spec_.is_moe()) acc.add("aux_loss", st.aux_loss.item<double>());
        tel_.maybe_heartbeat(s, "update");
      }
      GRPO_TRY_STATUS(optimizer_step(cfg_.lr, acc));
    }
  }
  const double update_s = seconds_since(t0);
  model_->set_router_bias_fault(0.0);

  // ---- metrics, reduced over ranks ----
  acc.add("reward_mean", rewards.mean().item<double>(), static_cast<double>(rows));
  acc.add("reward_sq", rewards.square().mean().item<double>(), static_cast<double>(rows));
  acc.add("response_length", g.valid.sum(1).to(at::kFloat).mean().item<double>(),
          static_cast<double>(rows));
  GRPO_TRY(auto means, acc.reduce(*comm_));
  for (const auto& [k, v] : means) {
    if (k != "reward_sq") m.fields[k] = v;
  }
  m.fields["reward_std"] =
      std::sqrt(std::max(0.0, means["reward_sq"] - means["reward_mean"] * means["reward_mean"]));
  at::Tensor tok =
      at::tensor({batch.valid.sum().item<std::int64_t>(), g.generated_tokens}, at::kLong);
  GRPO_TRY_STATUS(comm_->allreduce_sum(tok));
  m.tokens = tok[0].item<std::int64_t>();
  m.fields["generated_tokens"] = tok[1].item<std::int64_t>();
  m.fields["rollout_s"] = rollout_s;
  m.fields["old_logprob_s"] = old_s;
  m.fields["ref_logprob_s"] = ref_s;
  m.fields["update_s"] = update_s;
  if (!load.empty()) m.fields["expert_imbalance"] = expert_load_events(s, std::move(load));
  return core::ok_status();
}

void Trainer::check_control(bool& checkpoint, bool& stop) {
  std::error_code ec;
  const fs::path control = options_.run_dir / "control";
  checkpoint = g_checkpoint_signal != 0 || fs::exists(control / "checkpoint", ec);
  stop = g_stop_signal != 0 || fs::exists(control / "stop", ec);
}

int Trainer::run() {
  setup();
  if (Status st = resume(); !st.ok()) {
    spdlog::error("resume failed: {}", st.error().message);
    tel_.emit("error", {{"code", st.error().kind == ErrorKind::kUnavailable ? "COMM_ERROR"
                                                                            : "CHECKPOINT_ERROR"},
                        {"message", st.error().message}});
    return exit_code_for(st.error());
  }
  auto fail = [&](const core::Error& e) {
    const int code = exit_code_for(e);
    const char* name = code == kExitComm ? "COMM_ERROR" : code == kExitIo ? "IO_ERROR" : "ERROR";
    spdlog::error("step {} ({}): {}", step_ + 1, phase_, e.message);
    tel_.emit(
        name,
        {{"step", step_ + 1}, {"phase", phase_}, {"message", e.message}, {"exit_code", code}});
    return code;
  };

  const std::int64_t total = cfg_.total_steps();
  while (step_ < total) {
    const std::int64_t s = step_ + 1;
    const bool sft = s <= cfg_.sft_warmup_steps;
    enter_phase(s, "start");
    fire_step_faults(s, "start");
    const auto t0 = std::chrono::steady_clock::now();
    if (!sft && !grpo_started_) {
      if (Status st = start_grpo(); !st.ok()) return fail(st.error());
    }
    const auto step_t0 = std::chrono::steady_clock::now();
    const double comm_t0 = timed_comm_->seconds();
    // An injected straggler is slow inside the step, as a slow rank's compute would be.
    if (const std::int64_t ms = faults_.slow_ms(s); ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }
    StepMetrics m;
    Status st = sft ? sft_step(s, m) : grpo_step(s, m);
    if (!st.ok()) return fail(st.error());
    const double step_s = seconds_since(step_t0);
    const double step_comm_s = timed_comm_->seconds() - comm_t0;
    step_ = s;

    std::optional<double> val;
    const bool periodic = cfg_.test_freq > 0 && s % cfg_.test_freq == 0;
    if (periodic || s == total) {
      auto v = validate(s);
      if (!v.ok()) return fail(v.error());
      val = *v;
    }
    m.fields["step"] = s;
    m.fields["phase"] = sft ? "sft" : "grpo";
    m.fields["grpo_step"] = sft ? 0 : s - cfg_.sft_warmup_steps;
    m.fields["tokens"] = m.tokens;
    m.fields["step_s"] = step_s;
    m.fields["comm_s"] = step_comm_s;
    m.fields["tokens_per_s"] = step_s > 0 ? static_cast<double>(m.tokens) / step_s : 0.0;
    m.fields["wall_s"] = seconds_since(t0);
    m.fields["peak_rss_mib"] = static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0);
    m.fields["data_cursor"] = data_cursor_;
    if (val) m.fields["val_reward"] = *val;
    if (cfg_.checksum_freq > 0 && s % cfg_.checksum_freq == 0) {
      m.fields["weights_sha256"] = weights_sha256();
    }
    tel_.emit("step", m.fields);
    if (rank_ == 0) {
      if (sft) {
        spdlog::info("step {}/{} sft loss {:.4f} ({:.3f} s){}", s, total,
                     m.fields.value("sft_loss", 0.0), step_s,
                     val ? fmt::format(" val_reward {:.4f}", *val) : "");
      } else {
        spdlog::info(
            "step {}/{} grpo reward {:.4f} loss {:.4f} kl {:.5f} entropy {:.3f} clip {:.3f} "
            "gnorm {:.3f} {:.0f} tok/s{}",
            s, total, m.fields.value("reward_mean", 0.0), m.fields.value("loss", 0.0),
            m.fields.value("kl", 0.0), m.fields.value("entropy", 0.0),
            m.fields.value("clip_frac", 0.0), m.fields.value("grad_norm", 0.0),
            m.fields.value("tokens_per_s", 0.0),
            val ? fmt::format(" val_reward {:.4f}", *val) : "");
      }
    }

    // Checkpoint and stop requests, agreed by all ranks (max over ranks) once per step.
    bool want_ckpt = false, want_stop = false;
    check_control(want_ckpt, want_stop);
    at::Tensor flags = at::tensor({want_ckpt ? 1 : 0, want_stop ? 1 : 0}, at::kInt);
    if (Status fs_st = comm_->allreduce_max(flags); !fs_st.ok()) return fail(fs_st.error());
    want_ckpt = flags[0].item<int>() != 0;
    want_stop = flags[1].item<int>() != 0;
    const bool periodic_ckpt = cfg_.save_freq > 0 && s % cfg_.save_freq == 0;
    if (periodic_ckpt || s == total || want_ckpt || want_stop) {
      const std::string reason = s == total  ? "final"
                                 : want_stop ? "stop"
                                 : want_ckpt ? "request"
                                             : "periodic";
      if (Status cs = save_checkpoint(s, reason); !cs.ok()) return fail(cs.error());
      if (want_ckpt) {
        g_checkpoint_signal = 0;
        std::error_code ec;
        if (rank_ == 0) fs::remove(options_.run_dir / "control" / "checkpoint", ec);
      }
    }
    fire_step_faults(s, "checkpoint");
    if (want_stop && s < total) {
      std::error_code ec;
      if (rank_ == 0) fs::remove(options_.run_dir / "control" / "stop", ec);
      spdlog::warn("stopping at step {} on request (checkpoint written)", s);
      tel_.emit("stopped", {{"step", s}, {"exit_code", kExitStopped}});
      return kExitStopped;
    }
  }
  const std::string sha = weights_sha256();
  spdlog::info("training done at step {}; weights sha256 {}", step_, sha);
  tel_.emit("done", {{"step", step_}, {"weights_sha256", sha}, {"exit_code", kExitOk}});
  return kExitOk;
}

void setup_logging(const std::string& level, int rank) {
  auto logger = spdlog::stderr_color_mt("grpo-trainer");
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e [rank " + std::to_string(rank) + "] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(logger);
}

core::Result<core::ModelSpec> load_spec(const TrainerOptions& o, const TrainerConfig& cfg) {
  DirectoryModelProvider provider(o.profile_dir.empty() ? default_model_dir()
                                                        : fs::path(o.profile_dir) / "models");
  GRPO_TRY(core::ModelSpec spec, core::load_model(provider, cfg.model_path));
  if (spec.vocab_size < Tokenizer::kVocabSize) {
    return make_error(ErrorKind::kInvalidValue,
                      "model " + spec.name + " has vocab_size " + std::to_string(spec.vocab_size) +
                          " < the tokenizer's " + std::to_string(Tokenizer::kVocabSize));
  }
  if (spec.vision.present()) {
    spdlog::warn("model {} has a vision tower; grpo-trainer trains the language model only",
                 spec.name);
  }
  return spec;
}

}  // namespace

int run_trainer(const TrainerOptions& options) {
  Telemetry tel(stdout, 0, 1);
  int rank = 0;
  std::unique_ptr<Trainer> trainer;
  try {
    // ---- identity ----
    auto boot = make_bootstrap();
    if (!boot.ok()) {
      setup_logging(options.log_level, 0);
      spdlog::error("bootstrap: {}", boot.error().str());
      tel.emit("error", {{"code", "BOOTSTRAP_ERROR"}, {"message", boot.error().str()}});
      return boot.error().kind == ErrorKind::kUnavailable ? kExitComm : kExitUsage;
    }
    const bootstrap::WorldInfo world = (*boot)->world();
    rank = world.global_rank;
    setup_logging(options.log_level, rank);
    tel.set_world(world.global_rank, world.world_size);

    // ---- configuration ----
    TrainerConfig cfg;
    auto config_error = [&](const core::Error& e) {
      spdlog::error("config: {}", e.str());
      tel.emit("error", {{"code", "CONFIG_ERROR"}, {"message", e.str()}});
      return kExitUsage;
    };
    if (!options.config_file.empty()) {
      auto text = io::read_file(options.config_file);
      if (!text.ok()) return config_error(text.error());
      if (Status st = apply_toml(cfg, *text, options.config_file); !st.ok()) {
        return config_error(st.error());
      }
    }
    for (const std::string& o : options.overrides) {
      if (Status st = apply_override(cfg, o); !st.ok()) return config_error(st.error());
    }
    if (!options.model.empty()) cfg.model_path = options.model;
    if (options.resume == "none") {
      cfg.resume_mode = "disable";
    } else if (options.resume != "auto") {
      cfg.resume_mode = "resume_path";
      cfg.resume_from_path = options.resume;
    }
    if (Status st = validate(cfg); !st.ok()) return config_error(st.error());
    if (Status st = validate_for_world(cfg, world.world_size); !st.ok()) {
      return config_error(st.error());
    }
    auto spec = load_spec(options, cfg);
    if (!spec.ok()) return config_error(spec.error());
    if (cfg.device == "cuda" && !compat::cuda_available()) {
      return config_error(make_error(ErrorKind::kInvalidValue,
                                     "trainer.device = cuda but no CUDA device is available"));
    }
    std::vector<std::string> fault_specs = options.faults;
    if (const char* env = std::getenv("GRPO_FAULT"); env != nullptr && *env != '\0') {
      fault_specs.emplace_back(env);
    }
    std::vector<Fault> faults;
    for (const std::string& f : fault_specs) {
      auto parsed = parse_faults(f);
      if (!parsed.ok()) return config_error(parsed.error());
      faults.insert(faults.end(), parsed->begin(), parsed->end());
    }

    // ---- run directory, threads, BLAS ----
    std::error_code ec;
    fs::create_directories(options.run_dir / "control", ec);
    if (ec) {
      spdlog::error("cannot create run directory {}: {}", options.run_dir.string(), ec.message());
      tel.emit("error", {{"code", "IO_ERROR"}, {"message", ec.message()}});
      return kExitIo;
    }
    const int threads = cfg.threads > 0
                            ? static_cast<int>(cfg.threads)
                            : std::max(1, available_cores() / std::max(1, world.local_world_size));
    at::set_num_threads(threads);
    const BlasInfo blas = detect_blas();
    spdlog::info("grpo-trainer {} (LibTorch {}), rank {}/{} (local {}/{}) via {}, {} thread(s)",
                 version(), compat::torch_version(), world.global_rank, world.world_size,
                 world.local_rank, world.local_world_size, bootstrap::to_string(world.source),
                 at::get_num_threads());
    spdlog::info("BLAS: {} ({}){}", blas.vendor, blas.library.empty() ? "?" : blas.library,
                 blas.config.empty() ? "" : " " + blas.config);
    if (blas.vendor.find("reference") != std::string::npos) {
      spdlog::warn("the reference BLAS is ~19x slower than OpenBLAS: install libopenblas0-openmp");
    }
    install_signal_handlers();

    // ---- communicator ----
    std::unique_ptr<Communicator> comm;
    const auto comm_t0 = std::chrono::steady_clock::now();
    if (world.world_size == 1) {
      comm = make_single_process_communicator();
    } else {
      CommOptions co;
      co.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.comm_timeout_s * 1000));
      co.use_cuda = cfg.device == "cuda";
      auto made = make_c10d_communicator(**boot, co);
      if (!made.ok()) {
        spdlog::error("{}", made.error().message);
        tel.emit(
            "COMM_ERROR",
            {{"phase", "rendezvous"}, {"message", made.error().message}, {"exit_code", kExitComm}});
        return kExitComm;
      }
      comm = std::move(made).value();
    }
    const double comm_s = seconds_since(comm_t0);
    const std::int64_t params = core::count_params(*spec).total();
    tel.set_heartbeat_interval(cfg.heartbeat_interval_s);
    tel.emit("start", {{"version", std::string(version())},
                       {"torch_version", compat::torch_version()},
                       {"model", spec->name},
                       {"params", params},
                       {"threads", at::get_num_threads()},
                       {"blas", blas.vendor},
                       {"blas_library", blas.library},
                       {"backend", comm->backend()},
                       {"rendezvous_s", comm_s},
                       {"local_rank", world.local_rank},
                       {"bootstrap", bootstrap::to_string(world.source)},
                       {"run_dir", options.run_dir.string()},
                       {"total_steps", cfg.total_steps()},
                       {"sft_warmup_steps", cfg.sft_warmup_steps},
                       {"kernels", cfg.kernels},
                       {"faults", fault_specs}});
    spdlog::info("model {} ({} parameters), task {}, {} SFT + {} GRPO steps, run dir {}",
                 spec->name, params, cfg.task, cfg.sft_warmup_steps, cfg.total_training_steps,
                 options.run_dir.string());

    FaultInjector injector(std::move(faults), world.global_rank, options.run_dir / "faults");
    trainer = std::make_unique<Trainer>(std::move(cfg), std::move(spec).value(), options,
                                        std::move(boot).value(), std::move(comm), tel,
                                        std::move(injector));
    return trainer->run();
  } catch (const ExitRequest& e) {
    spdlog::warn("{} (exit {})", e.message, e.code);
    return e.code;
  } catch (const std::bad_alloc&) {
    const std::string phase = trainer ? trainer->phase() : "setup";
    spdlog::error("OOM_ERROR in phase {}: std::bad_alloc", phase);
    tel.emit("OOM_ERROR", {{"step", trainer ? trainer->current_step() : 0},
                           {"phase", phase},
                           {"requested_bytes", nullptr},
                           {"message", "std::bad_alloc"},
                           {"exit_code", kExitOom}});
    return kExitOom;
  } catch (const c10::Error& e) {
    const std::string msg = compat::error_text(e);
    const std::string phase = trainer ? trainer->phase() : "setup";
    if (compat::is_out_of_memory(e)) {
      const auto bytes = requested_bytes(msg);
      spdlog::error("OOM_ERROR in phase {}: {}", phase, msg);
      tel.emit("OOM_ERROR", {{"step", trainer ? trainer->current_step() : 0},
                             {"phase", phase},
                             {"requested_bytes", bytes ? json(*bytes) : json(nullptr)},
                             {"message", msg},
                             {"exit_code", kExitOom}});
      return kExitOom;
    }
    spdlog::error("internal error in phase {}: {}", phase, msg);
    tel.emit("ERROR", {{"phase", phase}, {"message", msg}, {"exit_code", kExitInternal}});
    return kExitInternal;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    tel.emit("ERROR", {{"message", e.what()}, {"exit_code", kExitInternal}});
    return kExitInternal;
  }
}

}  // namespace grpo::trainer
