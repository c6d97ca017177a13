#include "grpo/trainer/tensorboard_log.h"
#include "grpo/core/run_dir.h"
#include "grpo/core/telemetry_events.h"

namespace grpo::trainer {
namespace {

std::string validation_tag(std::string_view task) {
  return "val-core/" + std::string(task) + "/reward/mean@1";
}

}  // namespace

std::vector<tensorboard::Scalar> step_scalars(const nlohmann::json& f, std::string_view task,
                                              int world_size) {
  std::vector<tensorboard::Scalar> out;
  auto add = [&](const char* field, std::string tag, double scale = 1.0) {
    const auto it = f.find(field);
    if (it != f.end() && it->is_number())
      out.push_back({std::move(tag), it->get<double>() * scale});
  };
  // Rewards and validation (verl: compute_data_metrics, _validate).
  add("reward_mean", "critic/score/mean");
  add("reward_std", "critic/score/std");
  add("val_reward", validation_tag(task));
  add("response_length", "response_length/mean");
  // The update (verl: the actor's update_policy metrics).
  add("loss", "actor/loss");
  add("pg_loss", "actor/pg_loss");
  add("kl", "actor/kl_loss");
  add("entropy", "actor/entropy");
  add("clip_frac", "actor/pg_clipfrac");
  add("grad_norm", "actor/grad_norm");
  add("lr", "actor/lr");
  add("aux_loss", "actor/moe_aux_loss");
  add("sft_loss", "sft/loss");
  // Time and throughput (verl: compute_timing_metrics, compute_throughout_metrics).
  add("step_s", "timing_s/step");
  add("rollout_s", "timing_s/gen");
  add("old_logprob_s", "timing_s/old_log_prob");
  add("ref_logprob_s", "timing_s/ref");
  add("update_s", "timing_s/update_actor");
  add("tokens", "perf/total_num_tokens");
  add("tokens_per_s", "perf/tokens_per_s");
  add("tokens_per_s", "perf/throughput",
      1.0 / static_cast<double>(world_size > 0 ? world_size : 1));
  add("peak_rss_mib", "perf/peak_rss_gib", 1.0 / 1024.0);
  // MoE: max/mean tokens per expert of each layer.
  if (const auto it = f.find("expert_imbalance"); it != f.end() && it->is_array()) {
    for (const auto& l : *it) {
      if (!l.is_object() || !l.contains("layer") || !l.contains("imbalance")) continue;
      if (!l["layer"].is_number_integer() || !l["imbalance"].is_number()) continue;
      out.push_back({"moe/expert_imbalance/layer_" + std::to_string(l["layer"].get<long long>()),
                     l["imbalance"].get<double>()});
    }
  }
  return out;
}

core::Result<TensorBoardLog> TensorBoardLog::open(const std::filesystem::path& run_dir,
                                                  std::string task, int world_size) {
  GRPO_TRY(tensorboard::EventFileWriter w,
           tensorboard::EventFileWriter::create(run_dir / core::run_dir::kTensorboard, "trainer"));
  return TensorBoardLog(std::move(w), std::move(task), world_size);
}

core::Status TensorBoardLog::observe(std::string_view type, const nlohmann::json& fields) {
  if (!fields.is_object()) return core::ok_status();
  const auto step = fields.find("step");
  if (step == fields.end() || !step->is_number_integer()) return core::ok_status();
  if (type == core::telemetry::event::kStep) {
    return writer_.write_scalars(step->get<std::int64_t>(),
                                 step_scalars(fields, task_, world_size_));
  }
  if (type == core::telemetry::event::kValidation && fields.contains("val_reward") &&
      fields["val_reward"].is_number()) {
    return writer_.write_scalars(step->get<std::int64_t>(),
                                 {{validation_tag(task_), fields["val_reward"].get<double>()}});
  }
  return core::ok_status();
}

}  // namespace grpo::trainer
