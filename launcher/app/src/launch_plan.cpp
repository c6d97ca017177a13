// Planning for the launch use cases (launch.h): the catalog's profile and model with --set,
// the planner, and the embedded trainer's limits.
#include "grpo/app/catalog.h"
#include "grpo/app/launch.h"
#include "grpo/core/catalog.h"
#include "grpo/io/profile_store.h"
#include "grpo/job/trainer_args.h"

namespace grpo::app {

core::Result<core::Plan> build_plan(const std::vector<std::string>& profile_dirs,
                                    const PlanArgs& args, bool embedded_trainer,
                                    std::string* note) {
  const io::DirectorySourceProvider provider = catalog(profile_dirs);
  std::vector<core::Override> overrides;
  for (const auto& s : args.sets) {
    GRPO_TRY(core::Override o, core::parse_override(s));
    overrides.push_back(std::move(o));
  }
  core::PlanRequest request;
  std::vector<core::Override> profile_overrides;
  GRPO_TRY_STATUS(core::split_layout_overrides(overrides, request.constraints, profile_overrides));
  const core::LayoutConstraints given = request.constraints;
  // --set backend=embedded plans what `grpo-launch run` runs.
  embedded_trainer = embedded_trainer || given.backend == core::Backend::kEmbedded;
  if (embedded_trainer && given.backend == core::Backend::kFsdp) {
    return core::make_error(core::ErrorKind::kInvalidValue,
                            "--set backend=fsdp plans verl's FSDP strategy, which the embedded "
                            "grpo-trainer does not run (it runs data and expert parallelism); use "
                            "`grpo-launch plan --emit verl`, or run your own trainer with "
                            "--trainer-cmd");
  }
  if (embedded_trainer) core::limit_to_embedded_trainer(request.constraints, true);
  GRPO_TRY(request.cluster, core::load_cluster(provider, args.profile, profile_overrides));
  GRPO_TRY(request.model, core::load_model(provider, args.model));
  // `run` says in one line before anything starts that grpo-trainer cannot build this model.
  if (embedded_trainer) {
    GRPO_TRY_STATUS(
        core::embedded_trainer_supports(request.model, request.cluster.grpo.seq_length()));
  }
  if (!args.engines.empty()) {
    GRPO_TRY(request.engines, core::parse_engine_versions(args.engines));
  }
  request.alternatives = args.alternatives;
  core::Plan plan = core::make_plan(request);
  if (embedded_trainer && !core::plan_ok(plan)) {
    // Nothing fits with the optimizer state whole on every rank (as grpo-trainer keeps it): plan
    // with Megatron's memory savings, and say that the estimate assumes them.
    request.constraints = given;
    core::limit_to_embedded_trainer(request.constraints, false);
    core::Plan loose = core::make_plan(request);
    if (core::plan_ok(loose)) {
      if (note != nullptr) {
        *note =
            "no layout fits with the whole optimizer state on every rank, as grpo-trainer keeps "
            "it; this plan's memory estimate assumes " +
            std::string(loose.best.layout.distributed_optimizer ? "Megatron's distributed optimizer"
                                                                : "offload or recompute") +
            ", which the embedded trainer does not have yet";
      }
      return loose;
    }
  }
  return plan;
}

LaunchArgs split_trainer_sets(const LaunchArgs& args) {
  LaunchArgs out = args;
  out.plan.sets.clear();
  for (const auto& s : args.plan.sets) {
    const auto eq = s.find('=');
    if (core::is_trainer_key(s.substr(0, eq))) {
      out.trainer_sets.push_back(s);
    } else {
      out.plan.sets.push_back(s);
    }
  }
  return out;
}

core::Result<core::Plan> build_launch_plan(const std::vector<std::string>& profile_dirs,
                                           const LaunchArgs& args, const WarningSink& warn) {
  std::string note;
  GRPO_TRY(core::Plan plan, build_plan(profile_dirs, args.plan, args.trainer_cmd.empty(), &note));
  if (!note.empty() && warn) warn(note);
  return plan;
}

}  // namespace grpo::app
