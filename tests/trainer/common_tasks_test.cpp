#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "grpo/trainer/faults.h"
#include "grpo/trainer/sha256.h"
#include "grpo/trainer/tasks.h"

namespace grpo::trainer {
namespace {

TEST(Tokenizer, RoundTripsTheAlphabetAndStopsAtEos) {
  auto ids = Tokenizer::encode(Tokenizer::alphabet());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), 3);
  EXPECT_EQ(ids->back(), Tokenizer::kVocabSize - 1);
  EXPECT_EQ(Tokenizer::decode(*ids), std::string(Tokenizer::alphabet()));
  std::vector<std::int64_t> with_eos = *Tokenizer::encode("46");
  with_eos.push_back(Tokenizer::kEos);
  with_eos.push_back(5);
  EXPECT_EQ(Tokenizer::decode(with_eos), "46");
  EXPECT_FALSE(Tokenizer::encode("ABC").ok());
}

TEST(Tasks, AdditionAndReverseAreCorrectAndRewardExactMatch) {
  auto add = make_addition_task();
  std::uint64_t state = 42;
  for (int i = 0; i < 100; ++i) {
    Example e = add->draw(state, 3);
    const auto plus = e.prompt.find('+');
    const long a = std::stol(e.prompt.substr(0, plus));
    const long b = std::stol(e.prompt.substr(plus + 1, e.prompt.size() - plus - 2));
    EXPECT_EQ(std::to_string(a + b), e.answer);
    EXPECT_EQ(add->reward(e, e.answer), 1.0);
    EXPECT_EQ(add->reward(e, e.answer + "0"), 0.0);
  }
  auto rev = make_reverse_task();
  Example r = rev->draw(state, 5);
  EXPECT_EQ(r.prompt.substr(0, 2), "r:");
  std::string letters = r.prompt.substr(2, 5);
  EXPECT_EQ(std::string(letters.rbegin(), letters.rend()), r.answer);
  EXPECT_FALSE(make_task("sorting").ok());
}

TEST(Tasks, SplitsAreDeterministicAndDisjoint) {
  auto add = make_addition_task();
  Splits a = make_splits(*add, 7, 500, 50, 1, 2);
  Splits b = make_splits(*add, 7, 500, 50, 1, 2);
  Splits c = make_splits(*add, 8, 500, 50, 1, 2);
  ASSERT_EQ(a.train.size(), 500u);
  ASSERT_EQ(a.val.size(), 50u);
  std::set<std::string> val;
  for (const auto& e : a.val) val.insert(e.prompt);
  for (std::size_t i = 0; i < a.train.size(); ++i) {
    EXPECT_EQ(a.train[i].prompt, b.train[i].prompt);
    EXPECT_EQ(val.count(a.train[i].prompt), 0u);
  }
  bool differs = false;
  for (std::size_t i = 0; i < a.train.size(); ++i)
    differs |= a.train[i].prompt != c.train[i].prompt;
  EXPECT_TRUE(differs);
  auto order = epoch_order(1, 0, 100);
  EXPECT_EQ(std::set<std::int64_t>(order.begin(), order.end()).size(), 100u);
  EXPECT_NE(epoch_order(1, 1, 100), order);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // FIPS 180-2 appendix B.2: 56 bytes, so the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 h;  // split updates equal one update
  h.update(million.substr(0, 333));
  h.update(million.substr(333));
  EXPECT_EQ(h.hex_digest(), sha256_hex(million));
}

// An independent oracle: coreutils' sha256sum on files around the 64-byte block boundaries, every
// byte value present; each also hashed in two updates split at every third position.
TEST(Sha256, MatchesCoreutilsSha256sum) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("grpo-sha256-" + std::to_string(::getpid()));
  for (std::size_t n : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 100003}) {
    std::string data(n, '\0');
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<char>((i * 167 + n) & 0xff);
    {
      std::ofstream out(file, std::ios::binary);
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
    }
    const std::string cmd = "sha256sum '" + file.string() + "'";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char line[256] = {};
    const bool got = std::fgets(line, sizeof line, p) != nullptr;
    ASSERT_EQ(::pclose(p), 0) << cmd;
    ASSERT_TRUE(got) << cmd;
    const std::string expected = std::string(line).substr(0, 64);
    EXPECT_EQ(sha256_hex(data), expected) << n << " bytes";
    for (std::size_t cut = 0; cut <= n && n <= 200; cut += 3) {
      Sha256 h;
      h.update(data.data(), cut);
      h.update(std::string_view(data).substr(cut));
      EXPECT_EQ(h.hex_digest(), expected) << n << " bytes split at " << cut;
    }
  }
  std::filesystem::remove(file);
}

TEST(Sha256, DigestIsStableAndUpdateAfterItThrows) {
  Sha256 h;
  h.update("abc");
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(h.update("d"), std::runtime_error);
}

// Faults come only from the --fault specs: a GRPO_FAULT in the environment adds nothing and is
// reported as ignored.
TEST(Faults, OnlyTheGivenSpecsNeverTheEnvironment) {
  ::setenv("GRPO_FAULT", "crash@step=1", 1);
  auto none = parse_fault_specs({});
  ASSERT_TRUE(none.ok()) << none.error().str();
  EXPECT_TRUE(none->empty());
  auto given = parse_fault_specs({"oom@step=3,phase=update", "crash@step=5;slow@ms=10"});
  ASSERT_TRUE(given.ok()) << given.error().str();
  ASSERT_EQ(given->size(), 3u);
  EXPECT_EQ((*given)[0].kind, FaultKind::kOom);
  EXPECT_EQ((*given)[1].step, 5);
  EXPECT_EQ((*given)[2].kind, FaultKind::kSlow);
  EXPECT_FALSE(parse_fault_specs({"crash@step=1", "explode"}).ok());
  const auto warning = ignored_fault_environment();
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("GRPO_FAULT=crash@step=1 is ignored"), std::string::npos) << *warning;
  ::unsetenv("GRPO_FAULT");
  EXPECT_FALSE(ignored_fault_environment().has_value());
}

TEST(Faults, ParseAndFireOncePerRunDirectory) {
  auto f = parse_faults("crash@step=12,rank=1; slow@ms=200,rank=0 ;oom@step=3,phase=update");
  ASSERT_TRUE(f.ok()) << f.error().str();
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[0].kind, FaultKind::kCrash);
  EXPECT_EQ((*f)[0].step, 12);
  EXPECT_EQ((*f)[0].rank, 1);
  EXPECT_EQ((*f)[2].phase, "update");
  EXPECT_FALSE(parse_faults("explode@step=1").ok());
  EXPECT_FALSE(parse_faults("crash@step=x").ok());
  EXPECT_FALSE(parse_faults("slow@rank=0").ok());
  EXPECT_FALSE(parse_faults("crash@phase=lunch").ok());

  const auto dir =
      std::filesystem::temp_directory_path() / ("grpo-faults-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  FaultInjector r1(*f, 1, dir);
  EXPECT_FALSE(r1.take(FaultKind::kCrash, 11, "start"));
  EXPECT_TRUE(r1.take(FaultKind::kCrash, 12, "start"));
  FaultInjector again(*f, 1, dir);  // the next attempt in the same run directory
  EXPECT_FALSE(again.take(FaultKind::kCrash, 12, "start"));
  FaultInjector r0(*f, 0, dir);
  EXPECT_FALSE(r0.take(FaultKind::kCrash, 12, "start"));
  EXPECT_EQ(r0.slow_ms(5), 200);
  EXPECT_EQ(r1.slow_ms(5), 0);
  std::filesystem::remove_all(dir);
}

// `hold` waits until <run_dir>/faults/release exists; released() reads that file.
TEST(Faults, HoldIsReleasedByItsFile) {
  auto f = parse_faults("hold@step=5");
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ((*f)[0].kind, FaultKind::kHold);
  const auto dir =
      std::filesystem::temp_directory_path() / ("grpo-hold-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  FaultInjector inj(*f, 0, dir);
  EXPECT_TRUE(inj.take(FaultKind::kHold, 5, "start"));
  EXPECT_FALSE(inj.released());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "release").put('\n');
  EXPECT_TRUE(inj.released());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace grpo::trainer
