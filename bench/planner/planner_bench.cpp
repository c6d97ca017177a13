// Planning time of the full search, in process (no process start, no file I/O in the loop).
#include <benchmark/benchmark.h>

#include "grpo/core/catalog.h"
#include "grpo/io/profile_store.h"
#include "grpo/plan/planner.h"

namespace {

grpo::core::PlanRequest request(const char* cluster, const char* model,
                                std::vector<grpo::core::Override> sets) {
  const grpo::io::DirectorySourceProvider provider({std::string(GRPO_SOURCE_DIR) + "/profiles"});
  grpo::core::PlanRequest req;
  req.cluster = grpo::core::load_cluster(provider, cluster, sets).value();
  req.model = grpo::core::load_model(provider, model).value();
  return req;
}

void BM_Plan(benchmark::State& state, const char* cluster, const char* model,
             std::vector<grpo::core::Override> sets) {
  const auto req = request(cluster, model, std::move(sets));
  std::int64_t evaluated = 0;
  for (auto _ : state) {
    auto plan = grpo::core::make_plan(req);
    evaluated = plan.stats.evaluated;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["layouts"] = static_cast<double>(evaluated);
}

BENCHMARK_CAPTURE(BM_Plan, qwen3_235b_moe_1024x8, "moe-8node", "qwen3-235b-moe",
                  {{"nodes", "1024"}, {"grpo.gpu_memory_utilization", "0.8"}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, qwen3_30b_moe_a100x8, "a100x8", "qwen3-30b-moe", {})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, qwen2_5_72b_16x8, "a100-80g-x8", "qwen2.5-72b", {{"nodes", "16"}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
