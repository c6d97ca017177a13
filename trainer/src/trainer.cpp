// run_trainer: the edge of grpo-trainer. Start-up (identity from the bootstrap, configuration,
// model spec, faults, run directory, threads and BLAS, signal handlers, the communicator and the
// start event), then the run loop (run_loop.h); every error and exception becomes an exit code
// and an event here.
#include "grpo/trainer/trainer.h"
#include "grpo/core/run_dir.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <new>
#include <optional>
#include <regex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "grpo/bootstrap/bootstrap.h"
#include "grpo/core/catalog.h"
#include "grpo/core/telemetry_events.h"
#include "grpo/io/files.h"
#include "grpo/job/trainer_args.h"
#include "grpo/trainer/communicator.h"
#include "grpo/trainer/config.h"
#include "grpo/trainer/dataset.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/expert_parallel.h"
#include "grpo/trainer/faults.h"
#include "grpo/trainer/model_source.h"
#include "grpo/trainer/parallel.h"
#include "grpo/trainer/stack_report.h"
#include "grpo/trainer/system_info.h"
#include "grpo/trainer/tasks.h"
#include "grpo/trainer/telemetry.h"
#include "grpo/trainer/torch_compat.h"
#include "grpo/trainer/version.h"
#include "run_context.h"
#include "run_control.h"
#include "run_loop.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using core::Status;
using json = nlohmann::json;

namespace {

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
  GRPO_TRY_STATUS(
      core::embedded_trainer_supports(spec, cfg.max_prompt_length + cfg.max_response_length));
  if (spec.vision.present()) {
    spdlog::warn("model {} has a vision tower; grpo-trainer trains the language model only",
                 spec.name);
  }
  return spec;
}

// Without a world there is no rank for the log's pattern: rank 0's.
int bootstrap_failed(const std::string& log_level, Telemetry& tel, const core::Error& e) {
  setup_logging(log_level, 0);
  spdlog::error("bootstrap: {}", e.str());
  tel.emit(core::telemetry::event::kError,
           {{"code", core::telemetry::error_code::kBootstrap}, {"message", e.str()}});
  return e.kind == ErrorKind::kUnavailable ? kExitComm : kExitUsage;
}

int config_error(Telemetry& tel, const core::Error& e) {
  spdlog::error("config: {}", e.str());
  tel.emit(core::telemetry::event::kError,
           {{"code", core::telemetry::error_code::kConfig}, {"message", e.str()}});
  return kExitUsage;
}

// The configuration file, then the overrides, then the command line's model and resume.
core::Result<TrainerConfig> configure(const TrainerOptions& options, int world_size) {
  TrainerConfig cfg;
  if (!options.config_file.empty()) {
    GRPO_TRY(const std::string text, io::read_file(options.config_file));
    GRPO_TRY_STATUS(apply_toml(cfg, text, options.config_file));
  }
  for (const std::string& o : options.overrides) GRPO_TRY_STATUS(apply_override(cfg, o));
  if (!options.model.empty()) cfg.model_path = options.model;
  if (options.resume == "none") {
    cfg.resume_mode = "disable";
  } else if (options.resume != "auto") {
    cfg.resume_mode = "resume_path";
    cfg.resume_from_path = options.resume;
  }
  GRPO_TRY_STATUS(validate(cfg));
  GRPO_TRY_STATUS(validate_for_world(cfg, world_size));
  return cfg;
}

struct ModelAndData {
  core::ModelSpec spec;
  std::unique_ptr<TaskData> data;
};

// The model spec and the data (the built-in task, or the dataset read with the model directory's
// tokenizer), checked against each other, the layout and the device.
core::Result<ModelAndData> load_model_and_data(const TrainerOptions& options,
                                               const TrainerConfig& cfg, int world_size) {
  GRPO_TRY(core::ModelSpec spec, load_spec(options, cfg));
  if (const std::string why = core::embedded_trainer_unsupported(dims_from_config(cfg, world_size),
                                                                 cfg.sequence_parallel, spec);
      !why.empty()) {
    return make_error(ErrorKind::kInvalidValue, why);
  }
  if (auto stages = pipeline_stages(cfg, spec.num_layers); !stages.ok()) return stages.error();
  GRPO_TRY(std::unique_ptr<TaskData> data, make_task_data(cfg));
  if (data->vocab_size() > spec.vocab_size) {
    return make_error(ErrorKind::kInvalidValue,
                      "model " + spec.name + " has vocab_size " + std::to_string(spec.vocab_size) +
                          " < the tokenizer's " + std::to_string(data->vocab_size()));
  }
  if (cfg.device == "cuda" && !compat::cuda_available()) {
    return make_error(ErrorKind::kInvalidValue,
                      "trainer.device = cuda but no CUDA device is available");
  }
  return ModelAndData{std::move(spec), std::move(data)};
}

// Only the faults the launcher passed (--fault); never a stray GRPO_FAULT.
core::Result<std::vector<Fault>> launcher_faults(const TrainerOptions& options) {
  if (auto ignored = ignored_fault_environment()) spdlog::warn("{}", *ignored);
  return parse_fault_specs(options.faults);
}

int run_dir_failed(Telemetry& tel, const fs::path& run_dir, const std::error_code& ec) {
  spdlog::error("cannot create run directory {}: {}", run_dir.string(), ec.message());
  tel.emit(core::telemetry::event::kError,
           {{"code", core::telemetry::error_code::kIo}, {"message", ec.message()}});
  return kExitIo;
}

// trainer.threads, or the node's cores shared by its ranks; logs the build, the world and the
// BLAS, and returns the BLAS.
BlasInfo set_up_threads(const TrainerConfig& cfg, const bootstrap::WorldInfo& world) {
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
  return blas;
}

// The c10d options, with the run's secret, written by grpo-launch into the run directory
// (docs/security.md); an error where that file is there but cannot be read.
core::Result<CommOptions> c10d_options(const fs::path& run_dir, const TrainerConfig& cfg,
                                       const bootstrap::WorldInfo& world) {
  CommOptions co;
  co.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.comm_timeout_s * 1000));
  co.use_cuda = cfg.device == "cuda";
  const auto secret_file = run_dir / io::kRendezvousSecretFile;
  if (auto secret = io::read_secret_file(secret_file); secret.ok()) {
    co.secret = std::move(secret).value();
  } else if (secret.error().kind != core::ErrorKind::kNotFound) {
    return secret.error();
  } else if (world.global_rank == 0) {
    spdlog::warn(
        "no {}: the rendezvous store takes any client that reaches {} "
        "(grpo-launch writes one into every run directory)",
        secret_file.string(),
        world.fixed_rendezvous ? world.fixed_rendezvous->host : world.hostname);
  }
  return co;
}

int secret_unreadable(Telemetry& tel, const core::Error& e) {
  spdlog::error("{}", e.message);
  tel.emit(core::telemetry::event::kError,
           {{"code", core::telemetry::error_code::kConfig}, {"message", e.message}});
  return kExitUsage;
}

int rendezvous_failed(Telemetry& tel, const core::Error& e) {
  spdlog::error("{}", e.message);
  tel.emit(core::telemetry::event::kCommError,
           {{"phase", "rendezvous"}, {"message", e.message}, {"exit_code", kExitComm}});
  return kExitComm;
}

// The `start` event and the run's log line (heartbeats from here on).
void report_start(Telemetry& tel, const TrainerOptions& options, const TrainerConfig& cfg,
                  const ModelAndData& inputs, const bootstrap::WorldInfo& world,
                  const BlasInfo& blas, const Communicator& comm, double comm_s) {
  const std::int64_t params = core::count_params(inputs.spec).total();
  tel.set_heartbeat_interval(cfg.heartbeat_interval_s);
  tel.emit(core::telemetry::event::kStart, {{"version", std::string(version())},
                                            {"torch_version", compat::torch_version()},
                                            {"model", inputs.spec.name},
                                            {"params", params},
                                            {"threads", at::get_num_threads()},
                                            {"blas", blas.vendor},
                                            {"blas_library", blas.library},
                                            {"backend", comm.backend()},
                                            {"device", cfg.device},
                                            {"rendezvous_s", comm_s},
                                            {"local_rank", world.local_rank},
                                            {"bootstrap", bootstrap::to_string(world.source)},
                                            {"run_dir", options.run_dir.string()},
                                            {"total_steps", cfg.total_steps()},
                                            {"sft_warmup_steps", cfg.sft_warmup_steps},
                                            {"kernels", cfg.kernels},
                                            {"faults", options.faults}});
  spdlog::info("model {} ({} parameters), task {}, {} SFT + {} GRPO steps, run dir {}",
               inputs.spec.name, params, inputs.data->describe(), cfg.sft_warmup_steps,
               cfg.total_training_steps, options.run_dir.string());
}

// Start-up, then the run loop: returns the exit code. `trainer` is set once the run is made, for
// run_trainer's reports of what the loop throws.
int start_and_run(const TrainerOptions& options, Telemetry& tel,
                  const core::Result<std::unique_ptr<StackReporter>>& stacks,
                  std::unique_ptr<TrainingRun>& trainer) {
  // ---- identity ----
  auto boot = make_bootstrap();
  if (!boot.ok()) return bootstrap_failed(options.log_level, tel, boot.error());
  const bootstrap::WorldInfo world = (*boot)->world();
  setup_logging(options.log_level, world.global_rank);
  tel.set_world(world.global_rank, world.world_size);
  StackReporter::set_world(world.global_rank, world.world_size);
  if (!stacks.ok()) spdlog::warn("no stacks on SIGUSR1: {}", stacks.error().message);

  // ---- configuration ----
  auto cfg = configure(options, world.world_size);
  if (!cfg.ok()) return config_error(tel, cfg.error());
  // Every rank finds and verifies the checkpoint to resume on a thread of its own, while it
  // starts up and the process group forms (Checkpointer::resume takes the result).
  auto checkpoint_pick =
      look_for_checkpoint(*cfg, options.run_dir / core::run_dir::kCheckpoints, world.global_rank);
  auto inputs = load_model_and_data(options, *cfg, world.world_size);
  if (!inputs.ok()) return config_error(tel, inputs.error());
  auto faults = launcher_faults(options);
  if (!faults.ok()) return config_error(tel, faults.error());

  // ---- run directory, threads, BLAS ----
  std::error_code ec;
  fs::create_directories(options.run_dir / "control", ec);
  if (ec) return run_dir_failed(tel, options.run_dir, ec);
  const BlasInfo blas = set_up_threads(*cfg, world);
  install_signal_handlers();

  // ---- communicator ----
  std::unique_ptr<Communicator> comm;
  const auto comm_t0 = std::chrono::steady_clock::now();
  if (world.world_size == 1) {
    comm = make_single_process_communicator();
  } else {
    auto co = c10d_options(options.run_dir, *cfg, world);
    if (!co.ok()) return secret_unreadable(tel, co.error());
    auto made = make_c10d_communicator(**boot, *co);
    if (!made.ok()) return rendezvous_failed(tel, made.error());
    comm = std::move(made).value();
  }
  const double comm_s = seconds_since(comm_t0);
  report_start(tel, options, *cfg, *inputs, world, blas, *comm, comm_s);

  FaultInjector injector(std::move(faults).value(), world.global_rank, options.run_dir / "faults");
  trainer = std::make_unique<TrainingRun>(std::move(cfg).value(), std::move(inputs->spec),
                                          options.run_dir, std::move(boot).value(), std::move(comm),
                                          tel, std::move(injector), std::move(inputs->data));
  trainer->look_ahead(std::move(checkpoint_pick));
  return trainer->run();
}

}  // namespace

int run_trainer(const TrainerOptions& options) {
  Telemetry tel(stdout, 0, 1);
  // SIGUSR1 answers with every thread's stack (event `stack`) from the start on, so that a hang
  // in the rendezvous is attributed too; it outlives the training run below.
  auto stacks = StackReporter::start(stdout);
  std::unique_ptr<TrainingRun> trainer;
  try {
    return start_and_run(options, tel, stacks, trainer);
  } catch (const ExitRequest& e) {
    spdlog::warn("{} (exit {})", e.message, e.code);
    return e.code;
  } catch (const CollectiveError& e) {
    const std::string phase = trainer ? trainer->phase() : "setup";
    spdlog::error("step {} ({}): {}", trainer ? trainer->current_step() : 0, phase, e.what());
    tel.emit(core::telemetry::event::kCommError, {{"step", trainer ? trainer->current_step() : 0},
                                                  {"phase", phase},
                                                  {"message", e.what()},
                                                  {"exit_code", kExitComm}});
    return kExitComm;
  } catch (const std::bad_alloc&) {
    const std::string phase = trainer ? trainer->phase() : "setup";
    spdlog::error("OOM_ERROR in phase {}: std::bad_alloc", phase);
    tel.emit(core::telemetry::event::kOomError, {{"step", trainer ? trainer->current_step() : 0},
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
      tel.emit(core::telemetry::event::kOomError,
               {{"step", trainer ? trainer->current_step() : 0},
                {"phase", phase},
                {"requested_bytes", bytes ? json(*bytes) : json(nullptr)},
                {"message", msg},
                {"exit_code", kExitOom}});
      return kExitOom;
    }
    spdlog::error("internal error in phase {}: {}", phase, msg);
    tel.emit(core::telemetry::event::kInternalError,
             {{"phase", phase}, {"message", msg}, {"exit_code", kExitInternal}});
    return kExitInternal;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    tel.emit(core::telemetry::event::kInternalError,
             {{"message", e.what()}, {"exit_code", kExitInternal}});
    return kExitInternal;
  }
}

}  // namespace grpo::trainer
