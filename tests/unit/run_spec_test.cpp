// run.json, the env.json / rankmap.json readers, the allocation check and srun's command line.
#include "grpo/job/run_spec.h"
#include "grpo/job/job_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace grpo::core {
namespace {

RunSpec spec() {
  RunSpec s;
  s.run_id = "tiny-dense-slurm-test-20261129T204500Z";
  s.created_utc = "2026-11-29T20:45:00Z";
  s.profile = "slurm-test";
  s.model = "tiny-dense";
  s.version = "0.1.0";
  s.nodes = 2;
  s.ranks_per_node = 2;
  s.cpus_per_task = 2;
  s.trainer_command = {"/bin/probe", "--timeout-s", "30", "a b"};
  return s;
}

TEST(RunSpec, JsonRoundTrip) {
  const auto j = run_spec_to_json(spec());
  EXPECT_EQ(j["schema"], "grpo-launch/run/v1");
  EXPECT_EQ(j["world_size"], 4);
  auto back = run_spec_from_json(j, "run.json");
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ(back->trainer_command, spec().trainer_command);
  EXPECT_EQ(back->nodes, 2);
  EXPECT_EQ(back->cpus_per_task, 2);
  EXPECT_EQ(back->run_id, spec().run_id);
}

TEST(RunSpec, JsonErrors) {
  const auto bad = [](const std::function<void(nlohmann::json&)>& edit, ErrorKind kind,
                      const std::string& want) {
    auto j = run_spec_to_json(spec());
    edit(j);
    auto r = run_spec_from_json(j, "run.json");
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_EQ(r.error().kind, kind) << r.error().str();
    EXPECT_EQ(r.error().str(), "run.json: " + want);
  };
  bad([](auto& j) { j["schema"] = "x"; }, ErrorKind::kInvalidValue,
      "schema \"x\" is not \"grpo-launch/run/v1\"");
  bad([](auto& j) { j.erase("nodes"); }, ErrorKind::kMissingKey, "missing key \"nodes\"");
  bad([](auto& j) { j["nodes"] = "2"; }, ErrorKind::kWrongType, "\"nodes\" must be an integer");
  bad([](auto& j) { j["nodes"] = 0; }, ErrorKind::kInvalidValue,
      "\"nodes\" = 0 is out of range (1..16384)");
  bad([](auto& j) { j["world_size"] = 5; }, ErrorKind::kInvalidValue,
      "\"world_size\" = 5 is not nodes x ranks_per_node = 4");
  bad([](auto& j) { j["trainer_command"] = nlohmann::json::array(); }, ErrorKind::kInvalidValue,
      "\"trainer_command\" is empty");
  bad([](auto& j) { j["trainer_command"] = {1}; }, ErrorKind::kWrongType,
      "\"trainer_command\" must be an array of strings");
  bad([](auto& j) { j["exclude"] = {"n1,n2"}; }, ErrorKind::kInvalidValue,
      "\"exclude\" has a bad node name \"n1,n2\"");
  auto not_object = run_spec_from_json(nlohmann::json::array(), "run.json");
  EXPECT_EQ(not_object.error().kind, ErrorKind::kWrongType);
}

TEST(RunSpec, EnvAndRankMapReaders) {
  nlohmann::json env = {{"job", {{"OMP_NUM_THREADS", "2"}, {"A", "x y"}}}};
  auto e = job_env_from_json(env, "env.json");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->at("A"), "x y");
  env["job"]["BAD NAME"] = "1";
  EXPECT_EQ(job_env_from_json(env, "env.json").error().kind, ErrorKind::kInvalidValue);
  EXPECT_EQ(job_env_from_json({{"job", {{"A", 1}}}}, "env.json").error().kind,
            ErrorKind::kWrongType);
  EXPECT_EQ(job_env_from_json(nlohmann::json::object(), "env.json").error().kind,
            ErrorKind::kMissingKey);

  nlohmann::json map = {{"nodes", 2}, {"ranks_per_node", 2}, {"ranks", {1, 2, 3, 4}}};
  auto s = rank_map_shape_from_json(map, "rankmap.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->nodes, 2);
  map["ranks"] = {1, 2, 3};
  EXPECT_EQ(rank_map_shape_from_json(map, "rankmap.json").error().kind, ErrorKind::kInvalidValue);
}

TEST(RunSpec, AllocationCheckAndStepNodes) {
  RunSpec s = spec();
  Allocation a{7, {"n1", "n2", "n3"}, 2};
  EXPECT_TRUE(check_allocation(s, a).ok());
  EXPECT_EQ(step_nodes(s, a), (std::vector<std::string>{"n1", "n2"}));
  s.exclude = {"n1"};
  EXPECT_EQ(step_nodes(s, a), (std::vector<std::string>{"n2", "n3"}));
  s.exclude = {"n1", "n3"};
  auto st = check_allocation(s, a);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "job 7 has 3 node(s) (1 not excluded), the rank map needs 2");
  s.exclude.clear();
  a.tasks_per_node = 0;  // the job did not fix it: fine
  EXPECT_TRUE(check_allocation(s, a).ok());
  a.tasks_per_node = 1;
  EXPECT_FALSE(check_allocation(s, a).ok());
}

TEST(RunSpec, SrunCommand) {
  RunSpec s = spec();
  EXPECT_EQ(srun_command(s),
            (std::vector<std::string>{"srun", "--mpi=pmix", "--label", "--kill-on-bad-exit=1",
                                      "--distribution=block", "--overlap", "--nodes=2",
                                      "--ntasks=4", "--ntasks-per-node=2", "--cpus-per-task=2",
                                      "/bin/probe", "--timeout-s", "30", "a b"}));
  s.exclude = {"n3", "n4"};
  s.cpus_per_task = 0;
  const auto argv = srun_command(s, "/usr/bin/srun");
  EXPECT_EQ(argv[0], "/usr/bin/srun");
  EXPECT_EQ(argv[6], "--exclude=n3,n4");
  EXPECT_EQ(std::count_if(argv.begin(), argv.end(),
                          [](const std::string& a) { return a.rfind("--cpus-per-task", 0) == 0; }),
            0);
}

}  // namespace
}  // namespace grpo::core
