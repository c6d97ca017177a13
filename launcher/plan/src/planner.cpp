#include "grpo/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "grpo/core/family_rules.h"
#include "grpo/core/text.h"

namespace grpo::core {
namespace {

std::vector<int> divisors(std::int64_t n, std::int64_t max_value) {
  std::vector<int> out;
  for (std::int64_t i = 1; i <= std::min(n, max_value); ++i) {
    if (n % i == 0) out.push_back(static_cast<int>(i));
  }
  return out;
}

template <typename T>
std::vector<T> fixed_or(const std::optional<T>& fixed, std::vector<T> all) {
  if (fixed) return {*fixed};
  return all;
}

std::string describe(const Layout& l) {
  const auto& d = l.dims;
  std::string s = "TP=" + std::to_string(d.tp) + " PP=" + std::to_string(d.pp);
  if (d.cp > 1) s += " CP=" + std::to_string(d.cp);
  s += " DP=" + std::to_string(d.dp);
  if (d.ep > 1 || d.etp > 1) s += " EP=" + std::to_string(d.ep) + " ETP=" + std::to_string(d.etp);
  s += ", micro batch " + std::to_string(l.micro_batch) + ", offload " + to_string(l.offload) +
       ", recompute " + std::string(to_string(l.recompute));
  return s;
}

// The actor-side phase that overflows most (the rollout engine's own fit is judged apart).
std::string overflow_reason(const Candidate& c) {
  const PhaseMemory& p = c.memory.worst();
  return p.phase + " phase needs " + format_gib(p.total()) + " of " + format_gib(p.capacity);
}

double overflow_bytes(const Candidate& c) {
  const PhaseMemory& worst = c.memory.worst();
  return worst.total() - worst.capacity;
}

bool better(const Candidate& a, const Candidate& b) {
  if (a.cost.step_s != b.cost.step_s) return a.cost.step_s < b.cost.step_s;
  return a.memory.training.total() < b.memory.training.total();
}

}  // namespace

Status split_layout_overrides(const std::vector<Override>& all, LayoutConstraints& layout,
                              std::vector<Override>& profile) {
  for (const auto& o : all) {
    if (is_layout_key(o.key)) {
      GRPO_TRY_STATUS(apply_layout_setting(layout, o.key, o.value));
    } else {
      profile.push_back(o);
    }
  }
  return ok_status();
}

std::string cheapest_fix(const Candidate& c, const ClusterProfile& cluster) {
  const Layout& l = c.layout;
  const MemoryEstimate& m = c.memory;
  if (m.limiting().phase == "rollout") {
    if (!l.offload.optimizer && !l.offload.cpu_optimizer) {
      return "enable optimizer offload (frees the resident optimizer states during rollout)";
    }
    if (!l.offload.params)
      return "enable parameter offload (also frees the gradients during rollout)";
    return "lower rollout.gpu_memory_utilization";
  }
  const WorkloadSpec& w = cluster.grpo;
  const double data = m.training.bytes("activations") + m.training.bytes("logits");
  // verl requires the cap to hold one whole sequence.
  if (w.dynamic_batch() && w.max_token_len_per_gpu / 2 >= w.seq_length() &&
      data > 0.2 * m.training.capacity) {
    return "halve the token cap of a micro batch (ppo_max_token_len_per_gpu=" +
           std::to_string(w.max_token_len_per_gpu / 2) + ")";
  }
  if (l.micro_batch > 1 && !w.dynamic_batch() && data > 0.2 * m.training.capacity) {
    return "halve the micro batch (ppo_micro_batch_size_per_gpu=" +
           std::to_string(l.micro_batch / 2) + ")";
  }
  if (l.recompute == Recompute::kNone &&
      m.training.bytes("activations") > 0.1 * m.training.capacity) {
    return "enable full activation recompute";
  }
  if (!w.fused_logprob && m.training.bytes("logits") > 0.1 * m.training.capacity) {
    return "use fused log-prob kernels (use_fused_kernels=True) or entropy chunking";
  }
  if (l.backend == Backend::kFsdp)
    return "use more GPUs (FSDP shards every state over all ranks) or a Megatron layout";
  if (!l.offload.cpu_optimizer) return "use Megatron's CPU optimizer (optimizer_cpu_offload)";
  if (!l.offload.params && m.training.bytes("reference weights") > 0) {
    return "enable parameter offload (keeps the reference model on the host while the actor "
           "trains)";
  }
  if (l.dims.tp * 2 <= cluster.gpus_per_node) return "raise TP to " + std::to_string(l.dims.tp * 2);
  return "use more nodes or devices with more memory";
}

namespace {

struct FamilyFailure {
  bool any_fit = false;
  bool have = false;
  bool legal = false;  // the recorded failure is a memory failure of a legal layout
  double overflow = std::numeric_limits<double>::infinity();
  Candidate closest;
  Diagnostic legality;
};

struct Search {
  const ModelSpec& m;
  const ClusterProfile& c;
  const WorkloadSpec& w;
  const LayoutConstraints& k;
  Plan& plan;
  std::map<std::string, FamilyFailure> families;
  std::vector<Candidate> fitting;
  std::vector<Diagnostic> fewest_errors;
  bool have_errors = false;
  bool any_legal = false;
  Candidate closest;
  double closest_overflow = std::numeric_limits<double>::infinity();

  std::vector<std::string> family_keys(const Layout& l) const {
    std::vector<std::string> keys;
    if (!k.tp) keys.push_back("TP=" + std::to_string(l.dims.tp));
    if (!k.pp) keys.push_back("PP=" + std::to_string(l.dims.pp));
    if (m.is_moe() && !k.ep) keys.push_back("EP=" + std::to_string(l.dims.ep));
    return keys;
  }

  void note_illegal(const Layout& l, std::vector<Diagnostic> errors) {
    for (const auto& key : family_keys(l)) {
      FamilyFailure& f = families[key];
      if (!f.have) {
        f.have = true;
        f.legality = errors.front();
      }
    }
    if (!have_errors || errors.size() < fewest_errors.size()) {
      fewest_errors = std::move(errors);
      have_errors = true;
    }
  }

  // The rollout engine's own fit is judged once for all layouts (step 1 of make_plan); here
  // only the phases that depend on the actor layout count.
  void note_candidate(const Candidate& cand) {
    ++plan.stats.evaluated;
    const MemoryEstimate& mem = cand.memory;
    if (mem.rollout.fits() && mem.training.fits()) {
      ++plan.stats.fitting;
      for (const auto& key : family_keys(cand.layout)) families[key].any_fit = true;
      fitting.push_back(cand);
      return;
    }
    const double o = overflow_bytes(cand);
    if (o < closest_overflow) {
      closest_overflow = o;
      closest = cand;
    }
    for (const auto& key : family_keys(cand.layout)) {
      FamilyFailure& f = families[key];
      if (!f.legal || o < f.overflow) {
        f.have = f.legal = true;
        f.overflow = o;
        f.closest = cand;
      }
    }
  }
};

// Every (offload) combination to try, cheapest first, within what the user fixed.
std::vector<Offload> offload_ladder(const LayoutConstraints& c) {
  // verl reads grad_offload but never moves gradients; parameter offload frees them.
  // A fixed grad_offload is carried along but does not narrow the search (it is inert).
  const std::vector<Offload> ladder = {{false, false, false, false},
                                       {false, false, true, false},
                                       {true, false, false, false},
                                       {true, false, true, false},
                                       {true, false, false, true}};
  std::vector<Offload> out;
  for (Offload o : ladder) {
    if (c.param_offload && *c.param_offload != o.params) continue;
    if (c.optimizer_offload && *c.optimizer_offload != o.optimizer) continue;
    if (c.cpu_optimizer && *c.cpu_optimizer != o.cpu_optimizer) continue;
    o.grads = c.grad_offload.value_or(false);
    out.push_back(o);
  }
  if (out.empty()) {  // a combination off the ladder, fixed by the user
    out.push_back({c.param_offload.value_or(false), c.grad_offload.value_or(false),
                   c.optimizer_offload.value_or(false), c.cpu_optimizer.value_or(false)});
  }
  return out;
}

// Rollout TPs to try: the divisors of a node (replicas inside one node) and the multiples of a
// node that divide the world (verl >= 0.6 runs a replica over whole nodes).
std::vector<int> rollout_tp_candidates(int world, int gpn) {
  std::vector<int> out = divisors(gpn, gpn);
  for (int k = 2; gpn > 0 && static_cast<std::int64_t>(k) * gpn <= world; ++k) {
    if (world % (k * gpn) == 0) out.push_back(k * gpn);
  }
  return out;
}

bool rollout_tp_legal(const ModelSpec& m, const ClusterProfile& c, const EngineVersions& e,
                      int rtp) {
  Layout l;
  l.rollout_tp = rtp;
  return !has_errors(check_rollout_legality(m, c, l, e));
}

}  // namespace

bool plan_ok(const Plan& plan) {
  return plan.feasible && !has_errors(plan.diagnostics);
}

namespace {

// What step 1 of make_plan chose for the rollout engine.
struct RolloutChoice {
  int tp = 0;
  bool fits = false;
  RolloutMemory largest;  // the largest legal rollout TP, for the message when none fits
};

RolloutChoice choose_rollout(Plan& plan, const EngineVersions& engines) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  const LayoutConstraints& k = plan.constraints;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  // 1. The rollout engine: its TP does not interact with the actor layout (verl reshards the
  //    weights between them), so pick the fastest legal rollout TP whose weights fit the budget.
  std::vector<int> rtps =
      k.rollout_tp ? std::vector<int>{*k.rollout_tp} : rollout_tp_candidates(world, gpn);
  int rollout_tp = 0;
  double rollout_s = std::numeric_limits<double>::infinity();
  RolloutMemory largest;
  const auto pick_rollout = [&] {
    for (int rtp : rtps) {
      if (!k.rollout_tp && !rollout_tp_legal(m, c, engines, rtp)) continue;
      const RolloutMemory r = estimate_rollout_memory(m, c, w, rtp);
      if (rtp >= largest.rollout_tp) largest = r;
      if (!r.weights_fit) continue;
      const double t = estimate_rollout_seconds(m, c, w, r);
      if (t < rollout_s) {
        rollout_s = t;
        rollout_tp = rtp;
      }
    }
  };
  pick_rollout();
  // 1b. No rollout TP fits the profile's gpu_memory_utilization: the planner raises it itself
  //     (the cheapest fix it would otherwise print) to the smallest multiple of 0.05, at most
  //     0.90, at which the largest legal rollout TP fits, and says so. The actor state that
  //     stays resident during rollout must then fit beside the larger engine: the offload
  //     search below decides that.
  double raised_from = 0;
  if (rollout_tp == 0 && largest.rollout_tp > 0 && largest.utilization_needed <= 0.9) {
    const double needed = std::ceil(largest.utilization_needed * 20.0 - 1e-9) / 20.0;
    raised_from = plan.workload.gpu_memory_utilization;
    plan.workload.gpu_memory_utilization = std::max(needed, raised_from);
    pick_rollout();
  }
  const bool rollout_fits = rollout_tp > 0;
  if (!rollout_fits) rollout_tp = std::max(1, largest.rollout_tp);
  if (rollout_fits && raised_from > 0) {
    Diagnostic raised = make_diag(
        DiagCode::kKvCacheShort, "gpu_memory_utilization",
        "raised gpu_memory_utilization from " + format_fixed(raised_from, 2) + " to " +
            format_fixed(w.gpu_memory_utilization, 2) + ": at " + format_fixed(raised_from, 2) +
            " no legal rollout TP holds the weights (" + format_gib(largest.weights) +
            " per device at TP=" + std::to_string(largest.rollout_tp) + ")",
        "set actor_rollout_ref.rollout.gpu_memory_utilization=" +
            format_fixed(w.gpu_memory_utilization, 2) + " in the run");
    raised.severity = Severity::kInfo;
    plan.diagnostics.push_back(std::move(raised));
  }

  return {rollout_tp, rollout_fits, largest};
}

// False when the plan ends here: the fixed settings ask for a backend that cannot run them.
bool choose_backend(Plan& plan) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const LayoutConstraints& k = plan.constraints;
  // 2. The actor: (tp, pp, cp, ep, etp) shapes, then micro batch, offload and recompute.
  //    FSDP (--set backend=fsdp) has one shape: every state sharded over all ranks, CP the
  //    Ulysses size (1 unless fixed); Megatron-only settings fixed with it are refused.
  // A family verl's Megatron worker cannot build (family_rules.h) is planned for FSDP when the
  // backend is free and no Megatron-only setting is fixed; otherwise the plan says why not.
  if (k.backend.value_or(Backend::kMegatron) == Backend::kMegatron) {
    const FamilySupport family = verl_megatron_supports(m, true, true);
    const bool megatron_fixed = k.backend.has_value() || (k.tp && *k.tp != 1) ||
                                (k.pp && *k.pp != 1) || (k.ep && *k.ep != 1) ||
                                (k.etp && *k.etp != 1);
    if (!family.ok && megatron_fixed) {
      plan.diagnostics.push_back(
          make_diag(DiagCode::kInvalidSetting, "backend", family.why, family.fix));
      plan.diagnostics.push_back(
          make_diag(DiagCode::kNoFeasiblePlan, "layout",
                    "no legal layout for " + m.name + " on " + c.name + " with the fixed settings",
                    "fix the errors above"));
      return false;
    }
    if (!family.ok) {
      plan.constraints.backend = Backend::kFsdp;
      Diagnostic note = make_diag(DiagCode::kInvalidSetting, "backend",
                                  "planned for verl's FSDP strategy: " + family.why,
                                  "run it with actor_rollout_ref.actor.strategy=fsdp (as "
                                  "`plan --emit verl` writes)");
      note.severity = Severity::kInfo;
      plan.diagnostics.push_back(std::move(note));
    }
  }
  const bool fsdp = k.backend == Backend::kFsdp;
  if (fsdp) {
    std::string megatron_only;
    for (const auto& [name, v] :
         {std::pair{"tp", k.tp}, {"pp", k.pp}, {"ep", k.ep}, {"etp", k.etp}}) {
      if (v && *v != 1) megatron_only += (megatron_only.empty() ? "" : ", ") + std::string(name);
    }
    if (k.cpu_optimizer.value_or(false))
      megatron_only += megatron_only.empty() ? "cpu_optimizer" : ", cpu_optimizer";
    if (!megatron_only.empty()) {
      plan.diagnostics.push_back(make_diag(DiagCode::kInvalidSetting, "backend",
                                           "backend=fsdp shards every state over all ranks; " +
                                               megatron_only + " are Megatron-Core settings",
                                           "drop them, or plan with the Megatron backend"));
      plan.diagnostics.push_back(
          make_diag(DiagCode::kNoFeasiblePlan, "layout",
                    "no legal layout for " + m.name + " on " + c.name + " with the fixed settings",
                    "fix the errors above"));
      return false;
    }
  }
  return true;
}

// 2b. Every legal (tp, pp, cp, ep, etp) shape and micro batch, with each offload and recompute.
void search_layouts(Search& search, const EngineVersions& engines, int rollout_tp) {
  Plan& plan = search.plan;
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  const LayoutConstraints& k = plan.constraints;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;
  const bool fsdp = k.backend == Backend::kFsdp;
  const std::vector<int> tps = fsdp ? std::vector<int>{1} : fixed_or(k.tp, divisors(gpn, gpn));
  const std::vector<int> pps =
      fsdp ? std::vector<int>{1}
           : fixed_or(k.pp, divisors(world, std::min<std::int64_t>(m.num_layers, 128)));
  const std::vector<int> cps = fixed_or(k.cp, std::vector<int>{1});
  const std::vector<int> eps =
      fsdp ? std::vector<int>{1}
           : fixed_or(k.ep, m.is_moe() ? divisors(m.num_experts,
                                                  std::min<std::int64_t>(m.num_experts, world))
                                       : std::vector<int>{1});
  const std::vector<int> mbs = fixed_or(k.micro_batch, std::vector<int>{1, 2, 4, 8, 16});
  std::vector<Offload> offloads = offload_ladder(k);
  if (fsdp) {
    // verl's FSDP worker offloads parameters and optimizer states (fsdp_config.param_offload,
    // optimizer_offload); Megatron-Core's CPU optimizer does not exist there.
    std::erase_if(offloads, [](const Offload& o) { return o.cpu_optimizer; });
  }
  const std::vector<Recompute> recomputes =
      fixed_or(k.recompute, std::vector<Recompute>{Recompute::kNone, Recompute::kFull});

  for (int tp : tps) {
    for (int pp : pps) {
      for (int cp : cps) {
        for (int ep : eps) {
          std::vector<int> etps = {1};
          if (m.is_moe() && tp > 1 && m.moe_ffn_hidden_size % tp == 0) etps.push_back(tp);
          for (int etp : fsdp ? std::vector<int>{1} : fixed_or(k.etp, etps)) {
            Layout base;
            base.dims = ParallelDims{tp, pp, cp, 1, ep, etp};
            base.dims.dp = k.dp.value_or(world % (tp * pp * cp) == 0 ? world / (tp * pp * cp) : 1);
            base.backend = k.backend.value_or(Backend::kMegatron);
            base.sequence_parallel = !fsdp && k.sequence_parallel.value_or(tp > 1);
            base.distributed_optimizer = !fsdp && k.distributed_optimizer.value_or(true);
            base.ref_tp = k.ref_tp.value_or(0);
            base.rollout_tp = rollout_tp;
            base.first_stage_layers = k.first_stage_layers.value_or(0);
            base.last_stage_layers = k.last_stage_layers.value_or(0);
            if (!k.first_stage_layers && !k.last_stage_layers && pp > 1) {
              if (const auto split = uneven_split(static_cast<int>(m.num_layers), pp)) {
                base.first_stage_layers = split->first;
                base.last_stage_layers = split->second;
              }
            }
            ++plan.stats.structural;
            for (int mb : mbs) {
              Layout l = base;
              l.micro_batch = mb;
              std::vector<Diagnostic> errors;
              for (auto& dg : check_legality(m, c, w, l, engines)) {
                if (dg.severity == Severity::kError) errors.push_back(std::move(dg));
              }
              if (!errors.empty()) {
                // A micro batch that does not divide is not a property of the shape: only
                // report it when the user fixed it (or nothing else is wrong with the shape).
                const bool micro_only =
                    std::all_of(errors.begin(), errors.end(),
                                [](const Diagnostic& d) { return d.setting == "micro_batch"; });
                if (!micro_only || k.micro_batch) search.note_illegal(l, std::move(errors));
                continue;
              }
              if (mb == mbs.front() || !search.any_legal) ++plan.stats.legal;
              search.any_legal = true;
              for (const Offload& off : offloads) {
                for (Recompute rc : recomputes) {
                  l.offload = off;
                  l.recompute = rc;
                  Candidate cand;
                  cand.layout = l;
                  cand.memory = estimate_memory(m, c, w, l);
                  cand.cost = estimate_cost(m, c, w, l, cand.memory);
                  search.note_candidate(cand);
                }
              }
            }
          }
        }
      }
    }
  }
}

void note_rejections(Plan& plan, const Search& search) {
  // Rejected families: every searched value with no fitting layout.
  for (const auto& [key, f] : search.families) {
    if (f.any_fit || !f.have) continue;
    Rejection r;
    r.family = key;
    if (f.legal) {
      r.code = DiagCode::kOomRisk;
      r.reason = overflow_reason(f.closest) + " (closest: " + describe(f.closest.layout) + ")";
    } else {
      r.code = f.legality.code;
      r.reason = f.legality.message;
    }
    plan.rejections.push_back(std::move(r));
  }
}

// True when nothing fits (or the rollout engine does not): the plan is then finished, with why.
bool report_infeasible(Plan& plan, Search& search, const RolloutChoice& rollout) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  const LayoutConstraints& k = plan.constraints;
  const int world = c.world_size();
  if (!rollout.fits) {
    const RolloutMemory& r = rollout.largest;
    plan.diagnostics.push_back(make_diag(
        DiagCode::kOomRisk, "gpu_memory_utilization",
        "rollout weights " + format_gib(r.weights) + " per device at rollout TP=" +
            std::to_string(r.rollout_tp) + " (the largest legal) plus " + format_gib(r.workspace) +
            " workspace exceed the rollout budget of " + format_gib(r.budget) +
            " (gpu_memory_utilization " + format_fixed(w.gpu_memory_utilization, 2) + ")",
        r.utilization_needed < 0.95
            ? "raise rollout.gpu_memory_utilization to at least " +
                  format_fixed(std::ceil(r.utilization_needed * 100.0) / 100.0, 2) +
                  " and offload the actor during rollout"
            : "the rollout engine needs more devices per replica than the largest legal rollout "
              "TP gives"));
  }

  const bool have_fit = !search.fitting.empty();
  if (!have_fit || !rollout.fits) {
    plan.feasible = false;
    if (!search.any_legal) {
      for (auto& d : search.fewest_errors) plan.diagnostics.push_back(std::move(d));
      plan.diagnostics.push_back(make_diag(DiagCode::kNoFeasiblePlan, "layout",
                                           "no legal layout for " + m.name + " on " + c.name +
                                               (k.any() ? " with the fixed settings" : ""),
                                           "fix the errors above"));
      return true;
    }
    if (!have_fit) {
      plan.best = search.closest;
      const PhaseMemory& p = search.closest.memory.worst();
      std::string breakdown;
      for (const auto& item : p.items) {
        if (item.bytes <= 0) continue;
        breakdown += (breakdown.empty() ? "" : ", ") + item.name + " " + format_gib(item.bytes);
      }
      plan.diagnostics.push_back(make_diag(DiagCode::kOomRisk, "layout",
                                           overflow_reason(search.closest) + " with " +
                                               describe(search.closest.layout) + " [" + breakdown +
                                               "]",
                                           cheapest_fix(search.closest, c)));
    } else {
      std::sort(search.fitting.begin(), search.fitting.end(), better);
      plan.best = search.fitting.front();
    }
    plan.diagnostics.push_back(
        make_diag(DiagCode::kNoFeasiblePlan, "layout",
                  "no layout of " + m.name + " fits " + std::to_string(world) + " x " +
                      c.device.kind + (k.any() ? " with the fixed settings" : ""),
                  have_fit ? "make the rollout engine fit (see above)"
                           : (k.any() ? "relax the fixed settings or use more devices"
                                      : "use more nodes or devices with more memory")));
    return true;
  }

  return false;
}

// The winner, its alternatives, rank map and environment, and the findings about it.
void finish_winner(Plan& plan, Search& search, const PlanRequest& req) {
  const ModelSpec& m = plan.model;
  const ClusterProfile& c = plan.cluster;
  const WorkloadSpec& w = plan.workload;
  const LayoutConstraints& k = plan.constraints;
  const int gpn = c.gpus_per_node;
  std::sort(search.fitting.begin(), search.fitting.end(), better);
  plan.feasible = true;
  plan.best = search.fitting.front();
  auto family_of = [](const Layout& l) {
    return std::tuple{l.dims.tp, l.dims.pp, l.dims.cp, l.dims.ep, l.dims.etp};
  };
  std::set<std::tuple<int, int, int, int, int>> seen = {family_of(plan.best.layout)};
  for (const auto& cand : search.fitting) {
    if (static_cast<int>(plan.alternatives.size()) >= req.alternatives) break;
    if (seen.insert(family_of(cand.layout)).second) plan.alternatives.push_back(cand);
  }

  plan.rank_map = build_rank_map(c.nodes, gpn, plan.best.layout.dims);
  plan.env = build_env(c, plan.best.layout);
  for (const auto& d : plan.env.diagnostics) plan.diagnostics.push_back(d);

  // Findings about the winner that do not block it: the rules' warnings, then the plan's own.
  for (const auto& d : check_legality(m, c, w, plan.best.layout, req.engines)) {
    if (d.severity != Severity::kError) plan.diagnostics.push_back(d);
  }
  const Layout& b = plan.best.layout;
  if (b.dims.pp > 1 && m.num_layers % b.dims.pp != 0 && !k.first_stage_layers &&
      !k.last_stage_layers) {
    plan.diagnostics.push_back(make_diag(
        DiagCode::kUnevenPipeline, "pp",
        std::to_string(m.num_layers) + " layers over PP=" + std::to_string(b.dims.pp) +
            ": first stage " + std::to_string(b.first_stage_layers) + ", last stage " +
            std::to_string(b.last_stage_layers) + " layers",
        "set num_layers_in_first_pipeline_stage=" + std::to_string(b.first_stage_layers) +
            " and num_layers_in_last_pipeline_stage=" + std::to_string(b.last_stage_layers)));
  }
  const RolloutMemory& eng = plan.best.memory.engine;
  // vLLM's KV cache; grpo-trainer generates in batches of max_num_seqs with a cache of its own.
  if (eng.kv_capacity < eng.kv_needed && plan.best.layout.backend != Backend::kEmbedded) {
    const double per_seq = static_cast<double>(w.seq_length()) * eng.kv_bytes_per_token;
    const auto fit = static_cast<std::int64_t>(per_seq > 0 ? eng.kv_capacity / per_seq : 0);
    plan.diagnostics.push_back(make_diag(
        DiagCode::kKvCacheShort, "gpu_memory_utilization",
        "the rollout KV cache (" + format_gib(eng.kv_capacity) + ") holds " + std::to_string(fit) +
            " of " + std::to_string(eng.concurrent_seqs) + " concurrent sequences per replica",
        "raise gpu_memory_utilization or rollout TP, or accept slower rollout"));
  }
}

}  // namespace

Plan make_plan(const PlanRequest& req) {
  Plan plan;
  plan.model = req.model;
  plan.cluster = req.cluster;
  plan.workload = req.cluster.grpo;
  plan.constraints = req.constraints;
  plan.engines = req.engines;
  const RolloutChoice rollout = choose_rollout(plan, req.engines);
  if (!choose_backend(plan)) return plan;
  Search search{plan.model,
                plan.cluster,
                plan.workload,
                plan.constraints,
                plan,
                {},
                {},
                {},
                false,
                false,
                {},
                std::numeric_limits<double>::infinity()};
  search_layouts(search, req.engines, rollout.tp);
  note_rejections(plan, search);
  if (report_infeasible(plan, search, rollout)) return plan;
  finish_winner(plan, search, req);
  return plan;
}

}  // namespace grpo::core
