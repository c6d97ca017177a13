#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "grpo/trainer/config.h"

namespace grpo::trainer {
namespace {

TEST(Config, DefaultsValidateOnceAModelIsSet) {
  TrainerConfig c;
  EXPECT_FALSE(validate(c).ok());  // no model
  c.model_path = "tiny-dense";
  EXPECT_TRUE(validate(c).ok()) << validate(c).error().str();
}

TEST(Config, NestedTablesAndDottedKeys) {
  TrainerConfig c;
  const std::string text = R"(
[data]
train_batch_size = 32
[actor_rollout_ref.rollout]
n = 4
temperature = 0.7
[actor_rollout_ref.actor]
clip_ratio_high = 0.28
optim.lr = 3e-4
optim.betas = [0.9, 0.95]
[trainer]
total_training_steps = 7
)";
  ASSERT_TRUE(apply_toml(c, text, "x.toml").ok());
  EXPECT_EQ(c.train_batch_size, 32);
  EXPECT_EQ(c.rollout_n, 4);
  EXPECT_DOUBLE_EQ(c.temperature, 0.7);
  EXPECT_DOUBLE_EQ(c.effective_clip_high(), 0.28);
  EXPECT_DOUBLE_EQ(c.effective_clip_low(), 0.2);
  EXPECT_DOUBLE_EQ(c.lr, 3e-4);
  EXPECT_DOUBLE_EQ(c.betas[1], 0.95);
  EXPECT_EQ(c.total_training_steps, 7);
}

TEST(Config, UnknownKeyHasDidYouMeanAndLocation) {
  TrainerConfig c;
  auto st = apply_toml(c, "[actor_rollout_ref.rollout]\ntemprature = 0.5\n", "cfg.toml");
  ASSERT_FALSE(st.ok());
  const std::string msg = st.error().str();
  EXPECT_NE(msg.find("cfg.toml:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'actor_rollout_ref.rollout.temperature'"), std::string::npos)
      << msg;
  auto o = apply_override(c, "rollout.n=4");
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("actor_rollout_ref.rollout.n"), std::string::npos);
}

TEST(Config, OverridesAreTypedAndChecked) {
  TrainerConfig c;
  EXPECT_TRUE(apply_override(c, "actor_rollout_ref.rollout.n=16").ok());
  EXPECT_EQ(c.rollout_n, 16);
  EXPECT_TRUE(apply_override(c, "actor_rollout_ref.actor.use_kl_loss=false").ok());
  EXPECT_FALSE(c.use_kl_loss);
  EXPECT_TRUE(apply_override(c, "actor_rollout_ref.actor.optim.betas=[0.8,0.99]").ok());
  EXPECT_DOUBLE_EQ(c.betas[0], 0.8);
  EXPECT_TRUE(apply_override(c, "data.task=reverse").ok());

  auto bad_int = apply_override(c, "data.train_batch_size=abc");
  ASSERT_FALSE(bad_int.ok());
  EXPECT_EQ(bad_int.error().str(), "data.train_batch_size: expected an integer, got 'abc'");
  auto range = apply_override(c, "actor_rollout_ref.rollout.top_p=1.5");
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().message, "actor_rollout_ref.rollout.top_p: must be in (0, 1], got 1.5");
  auto choice = apply_override(c, "actor_rollout_ref.actor.kl_loss_type=low_var");
  ASSERT_FALSE(choice.ok());
  EXPECT_NE(choice.error().message.find("did you mean 'low_var_kl'"), std::string::npos);
  EXPECT_FALSE(apply_override(c, "no_equals_sign").ok());
  EXPECT_TRUE(apply_override(c, "kernels=reference").ok());
  EXPECT_FALSE(apply_override(c, "kernels=unfused").ok());
}

TEST(Config, CrossFieldAndWorldChecks) {
  TrainerConfig c;
  c.model_path = "tiny-dense";
  c.train_batch_size = 12;
  c.ppo_mini_batch_size = 8;
  EXPECT_FALSE(validate(c).ok());
  c.ppo_mini_batch_size = 6;
  EXPECT_TRUE(validate(c).ok());
  EXPECT_TRUE(validate_for_world(c, 2).ok());
  auto st = validate_for_world(c, 4);  // 6 prompts per mini batch cannot split over 4 ranks
  ASSERT_FALSE(st.ok());
  // With CP=2 the 4 ranks are 2 data-parallel replicas (the CP pair shares its samples, as
  // dims_from_config's dp = world / (TP x PP x CP)): 6 prompts split.
  c.context_parallel_size = 2;
  EXPECT_TRUE(validate_for_world(c, 4).ok());
  const auto odd = validate_for_world(c, 3);  // CP=2 does not divide 3 ranks: said first
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().str().find("TP x PP x CP (2) does not divide the number of ranks (3)"),
            std::string::npos)
      << odd.error().str();
  c.context_parallel_size = 1;
  c.max_response_length = 2;  // "99+99=" -> "198<eos>" needs 4
  EXPECT_FALSE(validate(c).ok());
}

TEST(Config, ToTomlRoundTrips) {
  TrainerConfig c;
  ASSERT_TRUE(apply_override(c, "actor_rollout_ref.actor.clip_ratio_low=0.1").ok());
  ASSERT_TRUE(apply_override(c, "actor_rollout_ref.model.path=tiny-moe").ok());
  const std::string text = to_toml(c);
  TrainerConfig d;
  auto st = apply_toml(d, text, "roundtrip.toml");
  ASSERT_TRUE(st.ok()) << st.error().str() << "\n" << text;
  EXPECT_EQ(to_toml(d), text);
}

// trainer.save_freq takes an integer or "auto" (the Young-Daly interval), from --set and TOML,
// and "auto" survives the round trip through config.toml.
TEST(Config, SaveFreqAuto) {
  TrainerConfig c;
  EXPECT_TRUE(c.async_save);
  ASSERT_TRUE(apply_override(c, "trainer.save_freq=auto").ok());
  EXPECT_EQ(c.save_freq, kSaveFreqAuto);
  const std::string text = to_toml(c);
  EXPECT_NE(text.find("trainer.save_freq = \"auto\""), std::string::npos) << text;
  TrainerConfig d;
  ASSERT_TRUE(apply_toml(d, text, "back.toml").ok());
  EXPECT_EQ(d.save_freq, kSaveFreqAuto);
  ASSERT_TRUE(apply_toml(d, "[trainer]\nsave_freq = 7\nasync_save = false\n", "x.toml").ok());
  EXPECT_EQ(d.save_freq, 7);
  EXPECT_FALSE(d.async_save);
  ASSERT_TRUE(apply_toml(d, "[trainer]\nsave_freq = \"auto\"\n", "x.toml").ok());
  EXPECT_EQ(d.save_freq, kSaveFreqAuto);
  auto bad = apply_toml(d, "[trainer]\nsave_freq = \"often\"\n", "x.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().str(), "x.toml:2:13: trainer.save_freq: expected an integer or \"auto\"");
  auto bad_set = apply_override(d, "trainer.save_freq=often");
  ASSERT_FALSE(bad_set.ok());
  EXPECT_EQ(bad_set.error().str(), "trainer.save_freq: expected an integer, got 'often'");
  EXPECT_FALSE(apply_override(d, "trainer.save_freq=-2").ok());  // the sentinel is not a number
}

// trainer.logger takes verl's values: Hydra's list syntax, a bare list, a comma-separated string
// (from --set) and a TOML list or string; every item is console or tensorboard.
TEST(Config, LoggerTakesVerlValues) {
  TrainerConfig c;
  EXPECT_EQ(c.logger, std::vector<std::string>{"console"});
  EXPECT_FALSE(c.logs_to_tensorboard());
  const std::vector<std::string> both = {"console", "tensorboard"};
  for (const char* set :
       {"trainer.logger=['console','tensorboard']", "trainer.logger=[\"console\", \"tensorboard\"]",
        "trainer.logger=[console,tensorboard]", "trainer.logger=console,tensorboard"}) {
    TrainerConfig d;
    ASSERT_TRUE(apply_override(d, set).ok()) << set;
    EXPECT_EQ(d.logger, both) << set;
    EXPECT_TRUE(d.logs_to_tensorboard()) << set;
  }
  ASSERT_TRUE(apply_override(c, "trainer.logger=tensorboard").ok());
  EXPECT_EQ(c.logger, std::vector<std::string>{"tensorboard"});
  ASSERT_TRUE(apply_override(c, "trainer.logger=[]").ok());
  EXPECT_TRUE(c.logger.empty());

  auto bad = apply_override(c, "trainer.logger=['console','wandb']");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().str(), "trainer.logger: 'wandb' is not one of: console, tensorboard");
  auto typo = apply_override(c, "trainer.logger=tensorbord");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean 'tensorboard'"), std::string::npos);

  TrainerConfig t;
  ASSERT_TRUE(apply_toml(t, "[trainer]\nlogger = [\"console\", \"tensorboard\"]\n", "x.toml").ok());
  EXPECT_EQ(t.logger, both);
  // The effective config.toml reads back.
  const std::string text = to_toml(t);
  EXPECT_NE(text.find("trainer.logger = [\"console\", \"tensorboard\"]"), std::string::npos)
      << text;
  TrainerConfig back;
  ASSERT_TRUE(apply_toml(back, text, "back.toml").ok());
  EXPECT_EQ(back.logger, both);
  ASSERT_TRUE(apply_toml(t, "[trainer]\nlogger = \"console\"\n", "x.toml").ok());
  EXPECT_EQ(t.logger, std::vector<std::string>{"console"});
  auto numbers = apply_toml(t, "[trainer]\nlogger = [1, 2]\n", "x.toml");
  ASSERT_FALSE(numbers.ok());
  EXPECT_EQ(numbers.error().str(), "x.toml:2:10: trainer.logger: expected a list of strings");
  auto wrong = apply_toml(t, "[trainer]\nlogger = 3\n", "x.toml");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, core::ErrorKind::kWrongType);
}

// Every key is documented in docs/trainer-config.md.
TEST(Config, EveryKeyIsDocumented) {
  std::ifstream in(std::string(GRPO_SOURCE_DIR) + "/docs/trainer-config.md");
  ASSERT_TRUE(in) << "docs/trainer-config.md missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const ConfigKey& k : config_keys()) {
    EXPECT_NE(doc.find("`" + k.name + "`"), std::string::npos) << k.name << " is not documented";
  }
}

}  // namespace
}  // namespace grpo::trainer
