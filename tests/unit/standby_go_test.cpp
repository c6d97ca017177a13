// The go a standby rank waits for (grpo/core/standby_go.h): values with newlines arrive whole
// (they were once dropped: the message was KEY=VALUE lines), a message is complete only at its
// closing empty entry, and what the local runner writes is what grpo-trainer reads.
#include "grpo/core/standby_go.h"

#include <gtest/gtest.h>

namespace grpo::core {
namespace {

TEST(StandbyGo, ValuesWithNewlinesArriveWhole) {
  const std::map<std::string, std::string> env = {
      {"RANK", "1"}, {"MULTI", "line one\nline two\n"}, {"EMPTY", ""}, {"EQ", "a=b"}};
  const std::string go = encode_standby_go(env);
  EXPECT_EQ(go, std::string("EMPTY=\0EQ=a=b\0MULTI=line one\nline two\n\0RANK=1\0\0", 47));
  const auto back = decode_standby_go(go);
  ASSERT_TRUE(back);
  const std::map<std::string, std::string> decoded(back->begin(), back->end());
  EXPECT_EQ(decoded, env);
}

TEST(StandbyGo, IncompleteUntilTheClosingEntry) {
  const std::string go = encode_standby_go({{"A", "1"}, {"B", "2"}});
  for (std::size_t n = 0; n < go.size(); ++n) {
    EXPECT_FALSE(decode_standby_go(std::string_view(go).substr(0, n))) << n;
  }
  EXPECT_TRUE(decode_standby_go(go));
  // No entries at all: one NUL. Entries without a name are skipped.
  EXPECT_TRUE(decode_standby_go(std::string(1, '\0'))->empty());
  EXPECT_TRUE(decode_standby_go(std::string("=x\0noeq\0\0", 9))->empty());
}

}  // namespace
}  // namespace grpo::core
