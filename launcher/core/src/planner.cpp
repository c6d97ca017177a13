#include "grpo/core/planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

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

struct FamilyFailure {
  bool any_fit = false;
  bool have = false;
  bool legal = false;  // the recorded failure is a memory failure of a legal layout
  double overflow = std::numeric_limits<double>::infinity();  // bytes over capacity
  Candidate closest;
  Diagnostic legality;
};

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

std::string overflow_reason(const Candidate& c) {
  const MemoryEstimate& m = c.memory;
  if (!m.rollout_weights_fit) {
    return "rollout weights " + format_gib(m.rollout_weights) +
           " at rollout TP=" + std::to_string(c.layout.rollout_tp) +
           " do not fit the rollout budget of " + format_gib(m.rollout_budget) +
           " (gpu_memory_utilization)";
  }
  const PhaseMemory& p = m.worst();
  return p.phase + " phase needs " + format_gib(p.total()) + " of " + format_gib(p.capacity);
}

double overflow_bytes(const Candidate& c) {
  const PhaseMemory& worst = c.memory.worst();
  double o = worst.total() - worst.capacity;
  if (!c.memory.rollout_weights_fit) {
    o = std::max(o, c.memory.rollout_weights - c.memory.rollout_budget + 1.0);
  }
  return o;
}

bool better(const Candidate& a, const Candidate& b) {
  if (a.cost.step_s != b.cost.step_s) return a.cost.step_s < b.cost.step_s;
  return a.memory.training.total() < b.memory.training.total();
}

std::vector<Offload> offload_options(const LayoutConstraints& c) {
  const std::vector<Offload> ladder = {
      {false, false, false}, {false, false, true}, {false, true, true}, {true, true, true}};
  std::vector<Offload> out;
  for (const auto& o : ladder) {
    if (c.param_offload && *c.param_offload != o.params) continue;
    if (c.grad_offload && *c.grad_offload != o.grads) continue;
    if (c.optimizer_offload && *c.optimizer_offload != o.optimizer) continue;
    out.push_back(o);
  }
  if (out.empty()) {  // a combination off the ladder, fixed by the user
    out.push_back({c.param_offload.value_or(false), c.grad_offload.value_or(false),
                   c.optimizer_offload.value_or(false)});
  }
  return out;
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
  if (!m.rollout_weights_fit) {
    return "raise rollout TP (rollout.tensor_model_parallel_size) or gpu_memory_utilization";
  }
  if (m.rollout.total() > m.rollout.capacity &&
      m.rollout.total() - m.rollout.capacity >= m.training.total() - m.training.capacity) {
    if (!l.offload.optimizer)
      return "enable optimizer offload (frees the resident optimizer during rollout)";
    if (!l.offload.params) return "enable parameter offload or lower gpu_memory_utilization";
    return "lower rollout.gpu_memory_utilization";
  }
  if (l.micro_batch > 1 && m.training.bytes("activations") > 0.2 * m.training.capacity) {
    return "halve the micro batch (ppo_micro_batch_size_per_gpu=" +
           std::to_string(l.micro_batch / 2) + ")";
  }
  if (l.recompute == Recompute::kNone &&
      m.training.bytes("activations") > 0.1 * m.training.capacity) {
    return "enable full activation recompute";
  }
  if (!l.offload.optimizer) return "enable optimizer offload";
  if (!l.offload.grads) return "enable gradient offload";
  if (!l.offload.params) return "enable parameter offload";
  if (l.dims.tp * 2 <= cluster.gpus_per_node) return "raise TP to " + std::to_string(l.dims.tp * 2);
  return "use more nodes or devices with more memory";
}

bool plan_ok(const Plan& plan) {
  return plan.feasible && !has_errors(plan.diagnostics);
}

Plan make_plan(const PlanRequest& req) {
  Plan plan;
  plan.model = req.model;
  plan.cluster = req.cluster;
  plan.workload = req.cluster.grpo;
  plan.constraints = req.constraints;
  const ModelSpec& m = req.model;
  const ClusterProfile& c = req.cluster;
  const WorkloadSpec& w = plan.workload;
  const LayoutConstraints& k = req.constraints;
  const int world = c.world_size();
  const int gpn = c.gpus_per_node;

  // Candidate values per dimension: the fixed value, or every plausible one (illegal ones
  // included where they make a useful rejection line, e.g. TP larger than a node).
  std::vector<int> tps;
  for (int v : divisors(gpn, gpn)) tps.push_back(v);
  if (2 * gpn <= m.num_attention_heads) tps.push_back(2 * gpn);
  tps = fixed_or(k.tp, tps);
  const std::vector<int> pps =
      fixed_or(k.pp, divisors(world, std::min<std::int64_t>(m.num_layers, 128)));
  const std::vector<int> cps = fixed_or(k.cp, std::vector<int>{1});
  const std::vector<int> eps = fixed_or(
      k.ep, m.is_moe() ? divisors(m.num_experts, std::min<std::int64_t>(m.num_experts, world))
                       : std::vector<int>{1});
  const std::vector<int> mbs_all = {1, 2, 4, 8, 16};
  const std::vector<int> mbs = fixed_or(k.micro_batch, mbs_all);
  const std::vector<Offload> offloads = offload_options(k);
  const std::vector<Recompute> recomputes =
      fixed_or(k.recompute, std::vector<Recompute>{Recompute::kNone, Recompute::kFull});

  // Rollout TP is independent of the actor layout (see docs/parallelism.md): pick the legal one
  // whose weights fit the engine's budget and whose rollout is fastest.
  std::vector<int> rtps = fixed_or(k.rollout_tp, divisors(gpn, gpn));

  std::map<std::string, FamilyFailure> families;
  auto family_keys = [&](const Layout& l) {
    std::vector<std::string> keys;
    if (!k.tp) keys.push_back("TP=" + std::to_string(l.dims.tp));
    if (!k.pp) keys.push_back("PP=" + std::to_string(l.dims.pp));
    if (m.is_moe() && !k.ep) keys.push_back("EP=" + std::to_string(l.dims.ep));
    return keys;
  };
  auto note_failure = [&](const Layout& l, const Candidate* cand, const Diagnostic* legality) {
    for (const auto& key : family_keys(l)) {
      FamilyFailure& f = families[key];
      if (cand != nullptr) {
        const double o = overflow_bytes(*cand);
        if (!f.legal || o < f.overflow) {
          f.have = f.legal = true;
          f.overflow = o;
          f.closest = *cand;
        }
      } else if (!f.have && legality != nullptr) {
        f.have = true;
        f.legality = *legality;
      }
    }
  };
  auto note_fit = [&](const Layout& l) {
    for (const auto& key : family_keys(l)) families[key].any_fit = true;
  };

  std::vector<Candidate> fitting;
  std::vector<Diagnostic> fewest_errors;
  bool have_fewest = false;
  bool any_legal = false;
  Candidate closest;
  double closest_overflow = std::numeric_limits<double>::infinity();

  for (int tp : tps) {
    for (int pp : pps) {
      for (int cp : cps) {
        for (int ep : eps) {
          std::vector<int> etps = {1};
          if (m.is_moe() && tp > 1) etps.push_back(tp);
          etps = fixed_or(k.etp, etps);
          for (int etp : etps) {
            {
              Layout base;
              base.dims = ParallelDims{tp, pp, cp, 1, ep, etp};
              base.dims.dp =
                  k.dp.value_or(world % (tp * pp * cp) == 0 ? world / (tp * pp * cp) : 1);
              base.sequence_parallel = k.sequence_parallel.value_or(tp > 1);
              base.distributed_optimizer = k.distributed_optimizer.value_or(true);
              base.ref_tp = k.ref_tp.value_or(0);
              base.first_stage_layers = k.first_stage_layers.value_or(0);
              base.last_stage_layers = k.last_stage_layers.value_or(0);
              if (!k.first_stage_layers && !k.last_stage_layers && pp > 1) {
                const auto split = uneven_split(static_cast<int>(m.num_layers), pp);
                if (split) {
                  base.first_stage_layers = split->first;
                  base.last_stage_layers = split->second;
                }
              }
              base.micro_batch = mbs.front();
              base.rollout_tp = rtps.front();
              ++plan.stats.structural;

              // Structural legality with a neutral micro batch and rollout TP, so that their own
              // rules do not reject the family.
              Layout probe = base;
              probe.micro_batch = k.micro_batch.value_or(1);
              probe.rollout_tp = k.rollout_tp.value_or(1);
              std::vector<Diagnostic> errors;
              for (auto& dg : check_legality(m, c, w, probe)) {
                if (dg.severity == Severity::kError) errors.push_back(std::move(dg));
              }
              if (!errors.empty()) {
                if (!have_fewest || errors.size() < fewest_errors.size()) {
                  fewest_errors = errors;
                  have_fewest = true;
                }
                note_failure(base, nullptr, &errors.front());
                continue;
              }
              ++plan.stats.legal;
              any_legal = true;

              // The best legal rollout TP for this world (independent of the actor layout
              // except through the resident state, which does not depend on rollout TP).
              for (int mb : mbs) {
                Layout l = base;
                l.micro_batch = mb;
                const std::int64_t per_rank = w.ppo_mini_batch_size * w.rollout_n / l.dims.dp;
                if (per_rank % mb != 0) {
                  if (k.micro_batch) {
                    auto d = check_legality(m, c, w, l);
                    if (!d.empty()) {
                      fewest_errors = d;
                      have_fewest = true;
                    }
                  }
                  continue;
                }
                for (const Offload& off : offloads) {
                  for (Recompute rc : recomputes) {
                    l.offload = off;
                    l.recompute = rc;
                    bool placed = false;
                    Candidate best_here;
                    for (int rtp : rtps) {
                      l.rollout_tp = rtp;
                      if (k.rollout_tp || rtps.size() == 1) {
                        // fixed: checked below via check_legality
                      } else {
                        const bool kv_ok = rtp <= m.num_kv_heads ? m.num_kv_heads % rtp == 0
                                                                 : rtp % m.num_kv_heads == 0;
                        if (m.num_attention_heads % rtp != 0 || !kv_ok ||
                            w.responses_per_step() % (world / rtp) != 0) {
                          continue;
                        }
                      }
                      Candidate cand;
                      cand.layout = l;
                      cand.memory = estimate_memory(m, c, w, l);
                      cand.cost = estimate_cost(m, c, w, l, cand.memory);
                      ++plan.stats.evaluated;
                      if (cand.memory.fits()) {
                        if (!placed || better(cand, best_here)) best_here = cand;
                        placed = true;
                      } else {
                        const double o = overflow_bytes(cand);
                        if (o < closest_overflow) {
                          closest_overflow = o;
                          closest = cand;
                        }
                        note_failure(l, &cand, nullptr);
                      }
                    }
                    if (placed) {
                      if (k.rollout_tp) {
                        auto d = check_legality(m, c, w, best_here.layout);
                        if (has_errors(d)) {
                          fewest_errors = d;
                          have_fewest = true;
                          continue;
                        }
                      }
                      ++plan.stats.fitting;
                      note_fit(best_here.layout);
                      fitting.push_back(std::move(best_here));
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  // Rejected families: every searched value with no fitting layout.
  for (const auto& [key, f] : families) {
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

  if (fitting.empty()) {
    plan.feasible = false;
    if (!any_legal) {
      plan.diagnostics = fewest_errors;
      plan.diagnostics.push_back(make_diag(DiagCode::kNoFeasiblePlan, "layout",
                                           "no legal layout for " + m.name + " on " + c.name +
                                               (k.any() ? " with the fixed settings" : ""),
                                           "fix the errors above"));
    } else {
      if (have_fewest && k.any()) plan.diagnostics = fewest_errors;
      if (closest_overflow < std::numeric_limits<double>::infinity()) {
        plan.best = closest;
        const PhaseMemory& p = closest.memory.worst();
        std::string breakdown;
        for (const auto& item : p.items) {
          if (item.bytes <= 0) continue;
          breakdown += (breakdown.empty() ? "" : ", ") + item.name + " " + format_gib(item.bytes);
        }
        plan.diagnostics.push_back(make_diag(
            DiagCode::kOomRisk, "layout",
            overflow_reason(closest) + " with " + describe(closest.layout) + " [" + breakdown + "]",
            cheapest_fix(closest, c)));
      }
      plan.diagnostics.push_back(make_diag(DiagCode::kNoFeasiblePlan, "layout",
                                           "no layout of " + m.name + " fits " +
                                               std::to_string(world) + " x " + c.device.kind +
                                               (k.any() ? " with the fixed settings" : ""),
                                           k.any() ? "relax the fixed settings or use more devices"
                                                   : "use more nodes or devices with more memory"));
    }
    return plan;
  }

  std::sort(fitting.begin(), fitting.end(), better);
  plan.feasible = true;
  plan.best = fitting.front();
  auto family_of = [](const Layout& l) {
    return std::tuple{l.dims.tp, l.dims.pp, l.dims.cp, l.dims.ep, l.dims.etp};
  };
  std::set<std::tuple<int, int, int, int, int>> seen = {family_of(plan.best.layout)};
  for (const auto& cand : fitting) {
    if (static_cast<int>(plan.alternatives.size()) >= req.alternatives) break;
    if (seen.insert(family_of(cand.layout)).second) plan.alternatives.push_back(cand);
  }

  plan.rank_map = build_rank_map(c.nodes, gpn, plan.best.layout.dims);
  plan.env = build_env(c, plan.best.layout);
  for (const auto& d : plan.env.diagnostics) plan.diagnostics.push_back(d);

  // Findings about the winner that do not block it.
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
  const MemoryEstimate& mem = plan.best.memory;
  if (mem.kv_capacity < mem.kv_needed) {
    const double per_seq = static_cast<double>(w.seq_length()) * mem.kv_bytes_per_token;
    const auto fit = static_cast<std::int64_t>(per_seq > 0 ? mem.kv_capacity / per_seq : 0);
    plan.diagnostics.push_back(make_diag(
        DiagCode::kKvCacheShort, "gpu_memory_utilization",
        "the rollout KV cache (" + format_gib(mem.kv_capacity) + ") holds " + std::to_string(fit) +
            " of " + std::to_string(mem.concurrent_seqs) + " concurrent sequences per replica",
        "raise gpu_memory_utilization or rollout TP, or accept slower rollout"));
  }
  return plan;
}

}  // namespace grpo::core
