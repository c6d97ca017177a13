#include "checkpointing.h"
#include "grpo/core/run_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "full_model.h"
#include "grpo/core/json_text.h"
#include "grpo/core/telemetry_events.h"
#include "grpo/io/files.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/sha256.h"
#include "grpo/trainer/tensor_io.h"
#include "grpo/trainer/version.h"
#include "hf_weights.h"

namespace grpo::trainer {
namespace fs = std::filesystem;
using core::ErrorKind;
using core::make_error;
using json = nlohmann::json;

Checkpointer::Checkpointer(RunContext& ctx, fs::path root) : ctx_(ctx), store_(std::move(root)) {}

core::Status Checkpointer::broadcast_bytes(std::string& bytes, int root) {
  at::Tensor len = at::tensor({static_cast<std::int64_t>(bytes.size())}, at::kLong);
  GRPO_TRY_STATUS(ctx_.comm->broadcast(len, root));
  const std::int64_t n = len.item<std::int64_t>();
  at::Tensor buf = at::zeros({std::max<std::int64_t>(n, 1)}, at::kByte);
  if (ctx_.rank == root && n > 0)
    std::memcpy(buf.data_ptr(), bytes.data(), static_cast<std::size_t>(n));
  GRPO_TRY_STATUS(ctx_.comm->broadcast(buf, root));
  bytes.assign(static_cast<const char*>(buf.data_ptr()), static_cast<std::size_t>(n));
  return core::ok_status();
}

std::future<CheckpointPick> look_for_checkpoint(const TrainerConfig& cfg, fs::path root, int rank) {
  return std::async(std::launch::async,
                    [store = CheckpointStore(std::move(root)), mode = cfg.resume_mode,
                     path = fs::path(cfg.resume_from_path),
                     rank] { return pick_checkpoint(store, mode, path, rank == 0); });
}

void Checkpointer::look_ahead(std::future<CheckpointPick> pick) {
  ahead_ = std::move(pick);
}

namespace {

// A checkpoint's identity for the ranks' agreement: its step and 60 bits of its manifest's
// SHA-256 (which lists every file's hash); -1 and 0 without one.
std::pair<std::int64_t, std::int64_t> identity(const std::optional<CheckpointInfo>& found) {
  if (!found) return {-1, 0};
  const std::string h = sha256_hex(core::json_text(found->manifest));
  return {found->step, static_cast<std::int64_t>(std::stoull(h.substr(0, 15), nullptr, 16))};
}

// The chosen checkpoint's files as this rank sees them: its own (own), or, when the ranks found
// different ones, rank 0's (then only rank 0 reads files and broadcasts what it read).
struct ResumeFiles {
  const CheckpointPick& pick;
  bool own = false;
  bool reads = false;  // this rank reads the files: own, or rank 0
  std::string_view bytes(const char* name) const {
    return pick.found ? pick.found->bytes(name) : std::string_view();
  }
};

// Reports the checkpoints the look skipped, then the ranks agree on the one they found (one
// all-reduce). Returns whether every rank found the same one. Errors: a rank's pick.error
// (kIo), the communicator's.
core::Result<bool> agree_on_checkpoint(RunContext& ctx, const CheckpointPick& pick) {
  for (const auto& s : pick.skipped) {
    spdlog::warn("skipping checkpoint {}: {}", s.path, s.reason);
    if (ctx.rank == 0)
      ctx.tel.emit(core::telemetry::event::kCheckpointSkipped,
                   {{"path", s.path}, {"reason", s.reason}});
  }
  const auto [found_step, found_id] = identity(pick.found);
  at::Tensor agree =
      at::tensor({pick.error ? 1L : 0L, found_step, -found_step, found_id, -found_id}, at::kLong);
  GRPO_TRY_STATUS(ctx.comm->allreduce_max(agree));
  if (agree[0].item<std::int64_t>() != 0) {
    if (pick.error) return *pick.error;
    return make_error(ErrorKind::kIo, "checkpoint " + ctx.cfg.resume_from_path +
                                          " does not verify on another rank");
  }
  const bool own = agree[1].item<std::int64_t>() == -agree[2].item<std::int64_t>() &&
                   agree[3].item<std::int64_t>() == -agree[4].item<std::int64_t>();
  if (!own && ctx.rank == 0) {
    spdlog::warn(
        "the ranks found different checkpoints (is the run directory shared?): rank 0 "
        "reads {} and broadcasts it",
        pick.found ? pick.found->dir.string() : std::string("none"));
  }
  return own;
}

// No checkpoint: the weights of the Hugging Face model directory, or rank 0's initial ones.
core::Status start_from_scratch(RunContext& ctx, TrainState& st) {
  spdlog::info("starting from scratch (no checkpoint to resume)");
  const NamedTensors local = model_weights(st);
  // A Hugging Face model directory: its weights, not the random initialization (rank 0 reads
  // the full tensors; scatter_full keeps each rank's experts and TP slices).
  if (const auto hf_dir = hf_model_dir(ctx.cfg.model_path)) {
    GRPO_TRY_STATUS(load_hf_weights(ctx, *hf_dir, sharding_plan(ctx, *st.model).params(), local));
    st.optim->sync_params();
    return core::ok_status();
  }
  // Identical initial weights on every rank holding a tensor, whatever happened before. TP
  // slices stay as drawn: every rank draws the whole model from the same seed and keeps its
  // slice (QwenModel's constructor), so the slices of all replicas agree.
  std::vector<Placement> whole;
  for (const Placement& f : sharding_plan(ctx, *st.model).params()) {
    if (!f.sliced()) whole.push_back(f);
  }
  GRPO_TRY_STATUS(scatter_full(ctx, whole,
                               std::map<std::string, at::Tensor>(local.begin(), local.end()), local,
                               [](const Placement& f) { return f.owner; }));
  st.optim->sync_params();
  return core::ok_status();
}

// The tensors of `file` into `dst`. The file's tensors alias the verified mapping (no copy);
// each rank keeps the part its layout holds (keep_part): from its own reading, or broadcast
// from rank 0's.
core::Status load_tensors(RunContext& ctx, const ResumeFiles& files, const char* file,
                          const NamedTensors& dst, const std::vector<Placement>& full) {
  std::map<std::string, at::Tensor> src;
  if (files.reads) {
    GRPO_TRY(NamedTensors parsed, view_safetensors(files.bytes(file)));
    src.insert(parsed.begin(), parsed.end());
  }
  if (files.own) return copy_own_parts(full, src, dst);
  return scatter_full(ctx, full, src, dst, [](const Placement&) { return 0; });
}

// The model, the optimizer moments and steps, the reference once GRPO started, the step and the
// data cursor, from the checkpoint and its trainer_state.json.
core::Status load_training_state(RunContext& ctx, const ResumeFiles& files, const json& state,
                                 TrainState& st) {
  const std::vector<Placement>& params = sharding_plan(ctx, *st.model).params();
  // Under mixed precision the file's fp32 weights go into the masters (model_weights).
  GRPO_TRY_STATUS(load_tensors(ctx, files, "model.safetensors", model_weights(st), params));
  st.optim->sync_params();
  // state() aliases the moments
  GRPO_TRY_STATUS(load_tensors(ctx, files, "optimizer.safetensors", st.optim->state(),
                               sharding_plan(ctx, *st.model).optimizer_states()));
  st.optim->set_steps(state.at("optimizer_steps").get<std::int64_t>());
  st.grpo_started = state.at("grpo_started").get<bool>();
  if (st.grpo_started) {
    st.ref =
        std::make_shared<QwenModel>(ctx.spec, st.model->ops(), st.model->lm_head_weight().options(),
                                    nullptr, st.model->expert_shard(), st.model->tensor_shard());
    GRPO_TRY_STATUS(
        load_tensors(ctx, files, "reference.safetensors", st.ref->named_params(), params));
    for (auto& [n, p] : st.ref->named_params()) p.set_requires_grad(false);
  }
  st.step = state.at("step").get<std::int64_t>();
  st.data_cursor = state.at("data_cursor").get<std::int64_t>();
  return core::ok_status();
}

// RNG: each data-parallel replica continues its own sampling stream (the one its TP rank 0
// saved) when the number of replicas is unchanged, whatever the TP or EP layout; otherwise
// every replica starts a fresh stream. Returns whether the replicas changed (resharded).
// Errors: kInvalidValue (too few sampling states), the communicator's.
core::Result<bool> restore_sampling_streams(RunContext& ctx, const ResumeFiles& files,
                                            const json& state, int saved_world, TrainState& st) {
  NamedTensors rngs;
  if (files.reads) {
    GRPO_TRY(rngs, view_safetensors(files.bytes("rng.safetensors")));
  }
  const int saved_replicas = state.value("data_ranks", saved_world);
  const bool resharded = saved_replicas != ctx.par.data_ranks();
  if (!resharded) {
    const int saved_tp = std::max(1, saved_world / saved_replicas);  // PP = CP = 1
    if (files.reads && rngs.size() < static_cast<std::size_t>(saved_world)) {
      return make_error(ErrorKind::kInvalidValue,
                        "rng.safetensors holds " + std::to_string(rngs.size()) +
                            " sampling states for " + std::to_string(saved_world) + " ranks");
    }
    const auto saved = [&](int d) {
      return rngs.at(static_cast<std::size_t>(d * saved_tp)).second;
    };
    if (files.own) {
      compat::set_generator_state(st.sample_gen, saved(ctx.par.data_rank()).clone());
    } else {
      at::Tensor mine = compat::generator_state(st.sample_gen);
      for (int d = 0; d < saved_replicas; ++d) {
        at::Tensor buf = ctx.rank == 0 ? saved(d).clone() : at::zeros_like(mine);
        GRPO_TRY_STATUS(ctx.comm->broadcast(buf, 0));
        if (d == ctx.par.data_rank()) compat::set_generator_state(st.sample_gen, buf);
      }
    }
  } else {
    st.sample_gen = compat::make_cpu_generator(sampling_seed(ctx.cfg.seed, ctx.par.data_rank()) +
                                               static_cast<std::uint64_t>(st.step) * 7919ULL);
    spdlog::warn(
        "resuming a checkpoint written by {} data-parallel replica(s) on {}: the model is "
        "resharded, the data cursor is global, sampling streams are re-seeded (not bit-exact)",
        saved_replicas, ctx.par.data_ranks());
  }
  return resharded;
}

}  // namespace

core::Status Checkpointer::resume(TrainState& st) {
  const TrainerConfig& cfg = ctx_.cfg;
  const int rank = ctx_.rank;
  const auto t_begin = std::chrono::steady_clock::now();
  // Every rank looks for the checkpoint itself (started before the rendezvous: look_ahead), then
  // the ranks check that they found the same one. Each then reads its own part of the files it
  // verified; only when the ranks disagree (a run directory not shared by every node) rank 0's
  // checkpoint reaches the others by broadcast.
  CheckpointPick pick =
      ahead_.valid() ? ahead_.get()
                     : pick_checkpoint(store_, cfg.resume_mode, cfg.resume_from_path, rank == 0);
  const double wait_s = seconds_since(t_begin);
  GRPO_TRY(const bool own, agree_on_checkpoint(ctx_, pick));
  const ResumeFiles files{pick, own, own || rank == 0};
  std::string state_text;  // trainer_state.json
  std::string found_path;
  if (files.reads) {
    state_text = std::string(files.bytes("trainer_state.json"));
    if (pick.found) found_path = pick.found->dir.string();
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!own) GRPO_TRY_STATUS(broadcast_bytes(state_text, 0));
  if (state_text.empty()) return start_from_scratch(ctx_, st);
  if (!own) GRPO_TRY_STATUS(broadcast_bytes(found_path, 0));
  json state = json::parse(state_text);
  const int saved_world = state.at("world_size").get<int>();
  const std::string saved_layout = state.value("layout", "");

  torch::NoGradGuard no_grad;
  GRPO_TRY_STATUS(load_training_state(ctx_, files, state, st));
  GRPO_TRY(const bool resharded, restore_sampling_streams(ctx_, files, state, saved_world, st));
  GRPO_TRY(const std::string loaded_sha, full_weights_sha256(ctx_, st));
  const double read_s = seconds_since(t0);
  const double secs = seconds_since(t_begin);
  spdlog::info("resumed from {} at step {} ({:.3f} s: look {:.3f} s, waited {:.3f} s, {} {:.3f} s)",
               found_path, st.step, secs, pick.seconds, wait_s, own ? "read" : "broadcast", read_s);
  ctx_.tel.emit(core::telemetry::event::kCheckpointLoaded, {{"step", st.step},
                                                            {"path", found_path},
                                                            {"seconds", secs},
                                                            {"source", own ? "own" : "rank0"},
                                                            {"look_s", pick.seconds},
                                                            {"wait_s", wait_s},
                                                            {"read_s", read_s},
                                                            {"saved_world_size", saved_world},
                                                            {"saved_layout", saved_layout},
                                                            {"layout", ctx_.par.describe()},
                                                            {"resharded", resharded},
                                                            {"weights_sha256", loaded_sha}});
  return core::ok_status();
}

struct StagedCheckpoint {
  std::int64_t step = 0;
  std::string reason;
  bool async = false;
  NamedTensors model, optim, ref, rng;
  bool has_ref = false;
  json state;  // trainer_state.json
  std::string config_toml;
  json meta;  // manifest metadata, weights_sha256 added by the writer
  std::int64_t keep_last = 1;
  std::optional<Fault> torn, corrupt;
  std::chrono::steady_clock::time_point t0;  // the save began
  double blocking_s = 0;                     // the training loop was stopped this long
  double write_s = 0;                        // set by the writer
};

Checkpointer::~Checkpointer() {
  drain();
}

void Checkpointer::drain() {
  if (writer_.joinable()) writer_.join();
}

core::Status Checkpointer::wait() {
  if (!pending_) return core::ok_status();
  pending_ = false;
  core::Status st = core::ok_status();
  if (ctx_.rank == 0) {
    // A long write must not look like a hang: heartbeats while waiting.
    while (outcome_.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      ctx_.tel.maybe_heartbeat(pending_step_, ctx_.phase);
    }
    drain();
    st = outcome_.get();
    last_write_s_ = *write_s_;
  }
  return share_outcome(st, "checkpoint of step " + std::to_string(pending_step_) + " failed: ");
}

core::Status Checkpointer::share_outcome(const core::Status& written, const std::string& what) {
  // 0 written, 1 failed, 2 failed for lack of space (the supervisor stops instead of retrying).
  at::Tensor status = at::zeros({1}, at::kLong);
  if (!written.ok()) status[0] = written.error().kind == ErrorKind::kNoSpace ? 2 : 1;
  GRPO_TRY_STATUS(ctx_.comm->broadcast(status, 0));
  const std::int64_t failed = status.item<std::int64_t>();
  if (failed == 0) return core::ok_status();
  const ErrorKind kind = failed == 2 ? ErrorKind::kNoSpace : ErrorKind::kIo;
  if (ctx_.rank == 0) return make_error(kind, what + written.error().message);
  return make_error(
      kind, std::string("rank 0 failed to checkpoint") + (failed == 2 ? ": no space left" : ""));
}

core::Result<fs::path> Checkpointer::write(StagedCheckpoint& c) {
  auto r = write_files(c);
  if (!r.ok()) store_.remove_temporaries();
  return r;
}

core::Result<fs::path> Checkpointer::write_files(StagedCheckpoint& c) {
  const auto tw = std::chrono::steady_clock::now();
  const std::int64_t s = c.step;
  GRPO_TRY(CheckpointWriter w, store_.begin(s));
  const std::string model_bytes = to_safetensors(c.model);
  if (c.torn) {
    ctx_.tel.emit(core::telemetry::event::kFaultInjected,
                  {{"fault", c.torn->text}, {"step", s}, {"phase", "checkpoint"}});
    (void)io::write_file_synced(w.dir() / "model.safetensors",
                                std::string_view(model_bytes).substr(0, model_bytes.size() / 2));
    std::fflush(nullptr);
    _exit(kExitInjectedCrash);
  }
  GRPO_TRY_STATUS(w.write_file("model.safetensors", model_bytes));
  GRPO_TRY_STATUS(w.write_file("optimizer.safetensors", to_safetensors(c.optim)));
  if (c.has_ref) {
    GRPO_TRY_STATUS(w.write_file("reference.safetensors", to_safetensors(c.ref)));
  }
  GRPO_TRY_STATUS(w.write_file("rng.safetensors", to_safetensors(c.rng)));
  GRPO_TRY_STATUS(w.write_file("trainer_state.json", core::json_text(c.state, 2) + "\n"));
  GRPO_TRY_STATUS(w.write_file(std::string(core::run_dir::kCheckpointConfig), c.config_toml));
  // The SHA-256 of the copy is the live weights' (full_weights_sha256): same names, same order.
  const std::string sha = tensors_sha256(c.model);
  c.meta["weights_sha256"] = sha;
  GRPO_TRY(fs::path final_dir, store_.commit(std::move(w), c.meta, c.keep_last));
  if (c.corrupt) {
    ctx_.tel.emit(core::telemetry::event::kFaultInjected,
                  {{"fault", c.corrupt->text}, {"step", s}, {"phase", "checkpoint"}});
    // Flip bytes in the middle of the committed model file: the manifest no longer matches.
    auto data = store_.read(final_dir, "model.safetensors");
    if (data.ok() && !data->empty()) {
      std::string d = std::move(data).value();
      for (std::size_t i = d.size() / 2; i < std::min(d.size(), d.size() / 2 + 64); ++i) {
        d[i] = static_cast<char>(~d[i]);
      }
      (void)io::write_file_synced(final_dir / "model.safetensors", d);
    }
  }
  c.write_s = seconds_since(tw);
  const double secs = seconds_since(c.t0);
  if (!c.async) c.blocking_s = secs;
  const std::int64_t bytes = CheckpointStore::bytes_on_disk(final_dir);
  spdlog::info("checkpoint {} saved ({} bytes, {:.3f} s, training stopped {:.3f} s, {}{})",
               final_dir.string(), bytes, secs, c.blocking_s, c.reason,
               c.async ? ", written in the background" : "");
  ctx_.tel.emit(core::telemetry::event::kCheckpointSaved, {{"step", s},
                                                           {"path", final_dir.string()},
                                                           {"bytes", bytes},
                                                           {"seconds", secs},
                                                           {"blocking_s", c.blocking_s},
                                                           {"write_s", c.write_s},
                                                           {"async", c.async},
                                                           {"reason", c.reason},
                                                           {"weights_sha256", sha}});
  return final_dir;
}

core::Result<double> Checkpointer::save(TrainState& st, std::int64_t s, const std::string& reason) {
  const TrainerConfig& cfg = ctx_.cfg;
  const int rank = ctx_.rank;
  const int world = ctx_.world;
  ctx_.enter_phase(s, "checkpoint");
  const auto t0 = std::chrono::steady_clock::now();
  GRPO_TRY_STATUS(wait());
  // Only periodic saves go to the background: a final, requested or stopping save is one the
  // caller (or the supervisor, before a preemption) needs on disk when this returns.
  const bool async = cfg.async_save && reason == "periodic";
  // Gather every rank's sampling RNG state at rank 0 (rows of zeros elsewhere, summed).
  at::Tensor mine = compat::generator_state(st.sample_gen);
  at::Tensor all = at::zeros({world, mine.numel()}, at::kByte);
  all[rank].copy_(mine);
  GRPO_TRY_STATUS(ctx_.comm->allreduce_sum(all));

  // Rank 0 writes the unsharded tensors: any layout can load them. What it holds itself is the
  // live tensor, copied when the write goes to the background (training changes it next step);
  // what came from another rank is already a copy.
  auto c = std::make_unique<StagedCheckpoint>();
  c->step = s;
  c->reason = reason;
  c->async = async;
  c->t0 = t0;
  const std::vector<Placement>& params = sharding_plan(ctx_, *st.model).params();
  // The copies go into the previous save's host buffers when the shapes match (its writer is
  // done with them: wait() above), so only the first asynchronous save allocates them.
  std::size_t staged = 0;
  auto into = [this, async, &staged](NamedTensors& out) {
    return [this, &out, async, &staged](const Placement& f, const at::Tensor& t) {
      if (!async || f.owner != 0) {
        out.emplace_back(f.name, t);
        return;
      }
      if (staged < staging_.size() && staging_[staged].sizes() == t.sizes() &&
          staging_[staged].scalar_type() == t.scalar_type()) {
        staging_[staged].copy_(t);
      } else if (staged < staging_.size()) {
        staging_[staged] = t.detach().clone();
      } else {
        staging_.push_back(t.detach().clone());
      }
      out.emplace_back(f.name, staging_[staged++]);
    };
  };
  GRPO_TRY_STATUS(gather_full(ctx_, params, model_weights(st), false, into(c->model)));
  GRPO_TRY_STATUS(gather_full(ctx_, sharding_plan(ctx_, *st.model).optimizer_states(),
                              st.optim->state(), false, into(c->optim)));
  if (st.grpo_started) {
    GRPO_TRY_STATUS(gather_full(ctx_, params, st.ref->named_params(), false, into(c->ref)));
  }
  if (rank == 0) {
    c->has_ref = st.grpo_started;
    for (int r = 0; r < world; ++r) c->rng.emplace_back("rank" + std::to_string(r), all[r].clone());
    c->state = {{"step", s},
                {"data_cursor", st.data_cursor},
                {"grpo_started", st.grpo_started},
                {"optimizer_steps", st.optim->steps()},
                {"world_size", world},
                {"layout", ctx_.par.describe()},
                {"data_ranks", ctx_.par.data_ranks()},
                {"seed", cfg.seed},
                {"model", ctx_.spec.name},
                {"torch_version", compat::torch_version()},
                {"threads", at::get_num_threads()}};
    c->config_toml = to_toml(cfg);
    c->meta = {{"world_size", world},
               {"phase", st.grpo_started ? "grpo" : "sft"},
               {"reason", reason},
               {"model", ctx_.spec.name},
               {"trainer_version", std::string(version())}};
    c->keep_last = cfg.max_ckpt_to_keep;
    c->torn = ctx_.faults.take(FaultKind::kTornCkpt, s, "checkpoint");
    c->corrupt = ctx_.faults.take(FaultKind::kCorruptCkpt, s, "checkpoint");
  }
  if (async) {
    pending_ = true;
    pending_step_ = s;
    if (rank == 0) {
      c->blocking_s = seconds_since(t0);
      auto promise = std::make_shared<std::promise<core::Status>>();
      outcome_ = promise->get_future();
      write_s_ = std::make_shared<double>(0.0);
      writer_ = std::thread([this, staged = std::move(c), promise, ws = write_s_]() {
        core::Status outcome = core::ok_status();
        try {
          auto r = write(*staged);
          if (!r.ok()) outcome = r.error();
        } catch (const std::exception& e) {
          outcome = make_error(ErrorKind::kIo, std::string("writing the checkpoint: ") + e.what());
        }
        *ws = staged->write_s;
        promise->set_value(std::move(outcome));
      });
    }
    return seconds_since(t0);
  }
  core::Status written = core::ok_status();
  if (rank == 0) {
    auto result = write(*c);
    if (result.ok()) {
      last_write_s_ = c->write_s;
    } else {
      written = result.error();
    }
  }
  c.reset();
  GRPO_TRY_STATUS(share_outcome(written, "checkpoint failed: "));
  return seconds_since(t0);
}

}  // namespace grpo::trainer
