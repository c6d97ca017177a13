// The verl keys both sides of grpo-launch use are spelled once, in grpo/core/verl_keys.h (issue
// 33): the planner's settings for grpo-trainer, grpo-trainer's key table, `check` and
// `plan --emit verl` name them through its constants, so a renamed key is renamed for every user.
// This test keeps it so: a contract key written as a literal anywhere else in launcher/ or
// trainer/ (whole, "key=" or as "actor_rollout_ref." + its rest) fails with its file:line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "grpo/core/verl_keys.h"
#include "test_support.h"

namespace grpo::core {
namespace {

std::vector<std::string> contract_keys() {
  using namespace verl_key;
  return {kTrainBatchSize,
          kMaxPromptLength,
          kMaxResponseLength,
          kValSize,
          kMiniBatch,
          kMicroBatch,
          kPpoEpochs,
          kUseKlLoss,
          kStrategy,
          kTp,
          kPp,
          kCp,
          kEp,
          kEtp,
          kSequenceParallel,
          kMegatronDtype,
          kTransformerConfig,
          kFirstStageLayers,
          kLastStageLayers,
          kRolloutN,
          kRolloutTp,
          kRolloutMaxNumSeqs,
          kModelPath,
          kSftBatchSize,
          kDevice,
          kAsyncSave,
          kNnodes,
          kGpusPerNode,
          kTotalTrainingSteps,
          kSaveFreq,
          kLogger,
          kSftWarmupSteps};
}

bool spells(const std::string& line, const std::string& key) {
  const std::string c = line.substr(0, line.find("//"));
  if (c.find('"' + key + '"') != std::string::npos) return true;
  if (c.find('"' + key + '=') != std::string::npos) return true;
  const std::string prefix = "actor_rollout_ref.";
  if (key.rfind(prefix, 0) == 0 &&
      c.find("+ \"" + key.substr(prefix.size()) + '"') != std::string::npos) {
    return true;
  }
  return false;
}

TEST(VerlKeyContract, KeysAreSpelledOnlyHere) {
  std::size_t files = 0;
  const auto found = test::product_lines_spelling(
      "verl_keys.h",
      [](const std::string& line) {
        std::vector<std::string> out;
        for (const auto& k : contract_keys()) {
          if (spells(line, k)) out.push_back(k);
        }
        return out;
      },
      files);
  EXPECT_GT(files, 100u);
  for (const auto& f : found) ADD_FAILURE() << f << " (name it through grpo/core/verl_keys.h)";
}

TEST(VerlKeyContract, TheCheckSeesEveryForm) {
  const std::string tp = verl_key::kTp;
  EXPECT_TRUE(
      spells(R"(  {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size", &C::tp},)", tp));
  EXPECT_TRUE(
      spells(R"(  "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + n,)", tp));
  EXPECT_TRUE(spells(R"(  int_setting(A + "actor.megatron.tensor_model_parallel_size", 1);)", tp));
  EXPECT_FALSE(spells(R"(  int_setting(verl_key::kTp, 1);)", tp));
  EXPECT_FALSE(spells(R"(  // actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2)", tp));
  // The keys are verl's or documented grpo-trainer extensions: in grpo-trainer's key table
  // (docs/trainer-config.md) or among the settings `check` reads (docs/check.md).
  std::string text;
  for (const char* doc : {"trainer-config.md", "check.md"}) {
    std::ifstream in(test::source_dir() / "docs" / doc);
    text += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  for (const auto& k : contract_keys()) {
    if (k == verl_key::kTransformerConfig) continue;  // a prefix
    EXPECT_NE(text.find("`" + k), std::string::npos) << k << " is in neither doc";
  }
}

}  // namespace
}  // namespace grpo::core
