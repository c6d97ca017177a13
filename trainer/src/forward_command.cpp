// `grpo-trainer forward` (trainer.h): the model of --model, with its Hugging Face weights when it
// is a directory, run once over --ids on one process.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "grpo/core/catalog.h"
#include "grpo/core/json_text.h"
#include "grpo/kernels/backend.h"
#include "grpo/kernels/ops.h"
#include "grpo/trainer/exit_codes.h"
#include "grpo/trainer/model.h"
#include "grpo/trainer/model_source.h"
#include "grpo/trainer/trainer.h"
#include "hf_weights.h"

namespace grpo::trainer {
namespace fs = std::filesystem;

namespace {

int fail(const core::Error& e) {
  std::cerr << "grpo-trainer forward: " << e.str() << "\n";
  return e.kind == core::ErrorKind::kIo ? kExitIo : kExitUsage;
}

}  // namespace

int run_forward(const ForwardOptions& o) {
  try {
    DirectoryModelProvider provider(o.profile_dir.empty() ? default_model_dir()
                                                          : fs::path(o.profile_dir) / "models");
    auto spec = core::load_model(provider, o.model);
    if (!spec.ok()) return fail(spec.error());
    auto backend = kernels::parse_backend(o.kernels);
    if (!backend.ok()) return fail(backend.error());
    if (o.ids.empty()) return fail(core::make_error(core::ErrorKind::kInvalidValue, "no --ids"));
    const core::Status trained =
        core::embedded_trainer_supports(*spec, static_cast<std::int64_t>(o.ids.size()));
    if (!trained.ok()) return fail(trained.error());
    for (std::int64_t id : o.ids) {
      if (id < 0 || id >= spec->vocab_size) {
        return fail(core::make_error(core::ErrorKind::kInvalidValue,
                                     "token id " + std::to_string(id) + " is outside [0, " +
                                         std::to_string(spec->vocab_size) + ")"));
      }
    }
    torch::NoGradGuard no_grad;
    at::Generator gen = compat::make_cpu_generator(static_cast<std::uint64_t>(o.seed));
    QwenModel model(*spec, kernels::ops_for(*backend), at::TensorOptions().dtype(at::kFloat), &gen);
    if (const auto dir = hf_model_dir(o.model)) {
      const ShardingPlan whole(*spec, QwenModel::whole_shapes(*spec, model.ops()), {});
      auto weights = read_hf_weights(*dir, whole.params(), *spec);
      if (!weights.ok()) return fail(weights.error());
      for (auto& [name, p] : model.named_params()) p.copy_(weights->at(name));
    }
    model.eval();
    const auto t = static_cast<std::int64_t>(o.ids.size());
    const at::Tensor tokens = at::tensor(o.ids, at::kLong).view({1, t});
    const at::Tensor positions = at::arange(t, at::kLong).view({1, t});
    const at::Tensor key_valid = at::ones({1, t}, at::kBool);
    const ModelOutput out = model.forward(tokens, positions, key_valid, at::Tensor(), nullptr);
    const at::Tensor logits = model.logits(out.hidden).to(at::kDouble).contiguous()[0];
    nlohmann::json rows = nlohmann::json::array();
    for (std::int64_t i = 0; i < t; ++i) {
      const at::Tensor row = logits[i];
      const double* d = row.data_ptr<double>();
      rows.push_back(std::vector<double>(d, d + row.numel()));
    }
    const nlohmann::json line = {{"model", spec->name}, {"ids", o.ids}, {"logits", rows}};
    std::cout << core::json_text(line) << "\n";
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "grpo-trainer forward: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace grpo::trainer
