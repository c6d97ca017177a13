#include "grpo/job/trainer_args.h"
#include "grpo/core/verl_keys.h"

#include <array>
#include <charconv>
#include <numeric>
#include <utility>

namespace grpo::core {

bool is_trainer_key(std::string_view key) {
  constexpr std::array<std::string_view, 4> kSections = {"data.", "actor_rollout_ref.",
                                                         "algorithm.", "trainer."};
  for (auto s : kSections) {
    if (key.rfind(s, 0) == 0) return true;
  }
  return key == "kernels";
}

std::vector<std::string> trainer_settings(const Plan& plan) {
  using verl_key::setting;
  const WorkloadSpec& w = plan.workload;
  const bool cpu = plan.cluster.device.vendor == DeviceVendor::kCpu;
  // The embedded plan's generation batch (what fits), else the workload's.
  const auto rollout_seqs = plan.best.memory.embedded_rollout_seqs > 0
                                ? plan.best.memory.embedded_rollout_seqs
                                : w.max_num_seqs;
  // verl's Megatron key and names (PrecisionType): bf16 trains with fp32 master weights.
  const char* dtype = w.dtype == Dtype::kFp32   ? "float32"
                      : w.dtype == Dtype::kBf16 ? "bfloat16"
                                                : "float16";
  return {
      setting(verl_key::kTrainBatchSize, std::to_string(w.train_batch_size)),
      setting(verl_key::kRolloutN, std::to_string(w.rollout_n)),
      setting(verl_key::kRolloutMaxNumSeqs, std::to_string(rollout_seqs)),
      setting(verl_key::kMiniBatch, std::to_string(w.ppo_mini_batch_size)),
      setting(verl_key::kPpoEpochs, std::to_string(w.ppo_epochs)),
      setting(verl_key::kMaxPromptLength, std::to_string(w.max_prompt_length)),
      setting(verl_key::kMaxResponseLength, std::to_string(w.max_response_length)),
      setting(verl_key::kUseKlLoss, w.use_kl_loss ? "true" : "false"),
      setting(verl_key::kMegatronDtype, dtype),
      // GPU profiles train on the GPUs; the embedded trainer has no Ascend backend
      // (embedded_trainer_unsupported_device says so before anything starts).
      setting(verl_key::kDevice, cpu ? "cpu" : "cuda"),
      // A background checkpoint writer needs a spare core: GPU hosts have them; on a CPU profile
      // every core trains and overlapped steps ran 2-4x slower (bench/checkpoint/RESULTS.md).
      setting(verl_key::kAsyncSave, cpu ? "false" : "true"),
  };
}

std::string embedded_trainer_unsupported_device(const ClusterProfile& cluster) {
  if (cluster.device.vendor != DeviceVendor::kAscend) return {};
  return "the embedded trainer runs on CPUs and NVIDIA GPUs; " + cluster.name +
         " has Ascend NPUs (run your own trainer with --trainer-cmd)";
}

std::string embedded_trainer_unsupported_dtype(const WorkloadSpec& workload) {
  if (workload.dtype != Dtype::kFp16) return {};
  return "the embedded trainer trains in bf16 (fp32 master weights) or fp32; fp16 needs loss "
         "scaling, which it does not have (set grpo.dtype=bf16 or grpo.dtype=fp32)";
}

namespace {

std::string number(int v) {
  return std::to_string(v);
}

// verl's key of every layout size the trainer takes, with the planner's layout key.
struct LayoutKey {
  std::string_view trainer_key;
  std::string_view layout_key;
  std::string (*value)(const Layout&);
};

constexpr std::array<LayoutKey, 9> kLayoutKeys = {{
    {verl_key::kTp, "tp", [](const Layout& l) { return number(l.dims.tp); }},
    {verl_key::kPp, "pp", [](const Layout& l) { return number(l.dims.pp); }},
    {verl_key::kFirstStageLayers, "first_stage_layers",
     [](const Layout& l) { return number(l.first_stage_layers); }},
    {verl_key::kLastStageLayers, "last_stage_layers",
     [](const Layout& l) { return number(l.last_stage_layers); }},
    {verl_key::kCp, "cp", [](const Layout& l) { return number(l.dims.cp); }},
    {verl_key::kEp, "ep", [](const Layout& l) { return number(l.dims.ep); }},
    {verl_key::kEtp, "etp", [](const Layout& l) { return number(l.dims.etp); }},
    {verl_key::kSequenceParallel, "sequence_parallel",
     [](const Layout& l) { return std::string(l.sequence_parallel ? "true" : "false"); }},
    {verl_key::kRolloutTp, "rollout_tp", [](const Layout& l) { return number(l.rollout_tp); }},
}};

}  // namespace

std::vector<std::string> trainer_layout_settings(const Layout& layout) {
  std::vector<std::string> out;
  for (const LayoutKey& k : kLayoutKeys) {
    // The stage split means something only with PP > 1.
    const bool stage_split = k.trainer_key.rfind(verl_key::kTransformerConfig, 0) == 0;
    if (stage_split && layout.dims.pp <= 1) continue;
    out.push_back(verl_key::setting(k.trainer_key, k.value(layout)));
  }
  return out;
}

std::string embedded_trainer_unsupported(const ParallelDims& d, bool sequence_parallel,
                                         const ModelSpec& model) {
  std::string missing;
  auto need = [&](int v, const char* name) {
    if (v > 1)
      missing += (missing.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(v);
  };
  need(d.cp, "CP");
  if (!missing.empty()) {
    return "the embedded trainer runs data, tensor, pipeline, expert and expert-tensor "
           "parallelism only; this layout needs " +
           missing + " (set them to 1, or run your own trainer with --trainer-cmd)";
  }
  if (d.etp > 1 && d.etp != d.tp) {
    // Each expert is split over the TP group, which gathers its rows for the experts (Megatron-
    // Core's general ETP, a separate expert-TP group inside the EP x ETP grid, is not built).
    return "ETP=" + std::to_string(d.etp) + " with TP=" + std::to_string(d.tp) +
           " is not built: the embedded trainer splits the experts over the TP group (set etp=1 "
           "or etp=tp)";
  }
  if (d.pp > 1 && model.tied_embeddings) {
    // Megatron-Core keeps a copy of the embedding on the last stage and sums the two gradients
    // over an embedding group; the embedded trainer does not build that group.
    return "PP=" + std::to_string(d.pp) + " with " + model.name +
           "'s tied embeddings is not built (the first and last stages would share the "
           "embedding); use PP=1";
  }
  if (d.tp > 1) {
    const std::string tp = "TP=" + std::to_string(d.tp);
    if (model.is_moe() && !sequence_parallel) {
      // Megatron-Core refuses it too (TransformerConfig: sequence parallelism must be on for
      // MoE with TP > 1); the MoE layer works on each TP rank's own rows of the sequence.
      return tp + " with the MoE model " + model.name +
             " needs sequence parallelism (set sequence_parallel=true)";
    }
    auto divides = [&](std::int64_t n) { return n % d.tp == 0; };
    const std::int64_t kv = model.num_kv_heads;
    // The dense FFN is split only where there are dense layers, the shared experts like it; the
    // routed experts only with ETP = TP (the planner checks their width divides ETP).
    const bool dense_ffn = !model.is_moe() || model.first_k_dense_layers > 0;
    const std::int64_t shared = model.num_shared_experts * model.shared_expert_ffn_hidden_size;
    // TP above the K/V heads (Megatron-Core replicates them) is not built: the replicas'
    // gradients would need a reduction over the ranks sharing a head.
    if (!divides(model.num_attention_heads) || !divides(kv) ||
        (dense_ffn && !divides(model.ffn_hidden_size)) || !divides(shared) ||
        !divides(model.vocab_size)) {
      return tp + " does not split " + model.name + " (" +
             std::to_string(model.num_attention_heads) + " heads, " + std::to_string(kv) +
             " K/V heads, FFN " + std::to_string(model.ffn_hidden_size) + ", vocabulary " +
             std::to_string(model.vocab_size) +
             "): the embedded trainer needs TP to divide the heads, K/V heads, FFN and "
             "vocabulary";
    }
  }
  if (d.etp > 1 && model.moe_ffn_hidden_size % d.etp != 0) {
    return "ETP=" + std::to_string(d.etp) + " does not split the experts' FFN width " +
           std::to_string(model.moe_ffn_hidden_size) + " of " + model.name;
  }
  if (d.ep > 1 && !model.is_moe()) {
    return "EP=" + std::to_string(d.ep) + " needs a mixture-of-experts model; " + model.name +
           " is dense";
  }
  if (d.ep > 1 && model.num_experts % d.ep != 0) {
    return "EP=" + std::to_string(d.ep) + " does not divide the " +
           std::to_string(model.num_experts) + " experts of " + model.name;
  }
  return {};
}

void limit_to_embedded_trainer(LayoutConstraints& c, bool as_it_runs) {
  c.backend = Backend::kEmbedded;
  for (std::optional<int>* size : {&c.pp, &c.cp}) {
    if (!size->has_value()) *size = 1;
  }
  if (!as_it_runs) return;
  // It keeps the whole optimizer state on every rank, offloads nothing and recomputes nothing:
  // the memory the planner estimates is then the memory that runs.
  for (std::optional<bool>* off : {&c.distributed_optimizer, &c.param_offload, &c.grad_offload,
                                   &c.optimizer_offload, &c.cpu_optimizer}) {
    if (!off->has_value()) *off = false;
  }
  if (!c.recompute) c.recompute = Recompute::kNone;
}

int layout_world_unit(const ParallelDims& d) {
  return std::lcm(d.tp * d.cp * d.pp, d.etp * d.ep * d.pp);
}

std::vector<int> batch_divisors(const Plan& plan, const std::vector<std::string>& trainer_sets) {
  auto value = [&](std::string_view key, std::int64_t fallback) {
    const auto v = last_trainer_set(trainer_sets, key);
    return static_cast<int>(v ? whole_number(*v).value_or(fallback) : fallback);
  };
  return {value(verl_key::kTrainBatchSize, plan.workload.train_batch_size),
          value(verl_key::kMiniBatch, plan.workload.ppo_mini_batch_size),
          value(verl_key::kSftBatchSize, kTrainerDefaultSftBatchSize),
          value(verl_key::kValSize, kTrainerDefaultValSize)};
}

std::optional<std::string> last_trainer_set(const std::vector<std::string>& trainer_sets,
                                            std::string_view key) {
  std::optional<std::string> value;
  for (const auto& kv : trainer_sets) {
    const auto eq = kv.find('=');
    if (eq != std::string::npos && std::string_view(kv).substr(0, eq) == key) {
      value = kv.substr(eq + 1);
    }
  }
  return value;
}

std::optional<std::int64_t> whole_number(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (err != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::string layout_key_for_trainer_key(std::string_view key) {
  for (const LayoutKey& k : kLayoutKeys) {
    if (key == k.trainer_key) return std::string(k.layout_key);
  }
  return {};
}

}  // namespace grpo::core
