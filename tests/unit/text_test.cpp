#include <gtest/gtest.h>

#include "grpo/core/result.h"
#include "grpo/core/text.h"

namespace grpo::core {
namespace {

TEST(Text, SplitKeepsEveryField) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(split("a,b", ','), (V{"a", "b"}));
  EXPECT_EQ(split("a,,b,", ','), (V{"a", "", "b", ""}));
  EXPECT_EQ(split("", ','), (V{""}));
  EXPECT_EQ(split("/x:/y", ':'), (V{"/x", "/y"}));
}

TEST(Text, TrimAsciiWhiteSpace) {
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(trim(" \n "), "");
}

TEST(Text, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("tp", "pp"), 1u);
}

TEST(Text, ClosestMatchOnlySuggestsLikelyTypos) {
  const std::vector<std::string> keys = {"gpus_per_node", "nodes", "device"};
  EXPECT_EQ(closest_match("gpus_per_nodes", keys), "gpus_per_node");
  EXPECT_EQ(closest_match("zzzzzzzzzzzz", keys), std::nullopt);
  EXPECT_EQ(did_you_mean("node", keys), " (did you mean 'nodes'?)");
}

TEST(Text, ErrorsAreOneLine) {
  const Error e = make_error(ErrorKind::kParse, "a\nb", {"f.toml", 3, 4});
  EXPECT_EQ(e.str(), "f.toml:3:4: a b");
  EXPECT_EQ(SourceLocation({"f", 2, 0}).str(), "f:2");
}

TEST(Text, Formatting) {
  EXPECT_EQ(format_gib(1.5 * kGiB), "1.5 GiB");
  EXPECT_EQ(format_count(30.5e9), "30.5B");
  EXPECT_EQ(format_count(235e9), "235B");
  EXPECT_EQ(format_count(768e6), "768M");
}

}  // namespace
}  // namespace grpo::core
