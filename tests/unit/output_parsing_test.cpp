// Reading srun's output: labels, and a rank's line longer than srun's 1 KiB I/O message put
// back together. The piece sizes are those srun 22.05 printed on the test cluster for lines of
// 2,500, 1,024, 2,048 and 1,023 bytes (`srun --label bash -c 'cat lines'`): 1024 + 1024 + 452;
// 1024 + 0; 1024 + 1024 + 0; 1023.
#include <gtest/gtest.h>

#include "grpo/supervise/output_parsing.h"

namespace grpo::supervise {
namespace {

TEST(OutputParsing, LabelsArePaddedRanks) {
  auto l = parse_label("  12: {\"type\":\"heartbeat\"}");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->rank, 12);
  EXPECT_EQ(l->text, "{\"type\":\"heartbeat\"}");
  EXPECT_FALSE(parse_label("srun: error: n1: task 0: Killed"));
}

TEST(OutputParsing, LongLinesArePutBackTogetherPerRank) {
  const std::string line2500 =
      "{\"type\":\"step\",\"pad\":\"" + std::string(2500 - 24, 'x') + "\"}";
  ASSERT_EQ(line2500.size(), 2500u);
  LabelJoiner j;
  // Rank 0's three pieces, interleaved with rank 1's short line and its 1,024-byte line.
  EXPECT_FALSE(j.add(0, std::string_view(line2500).substr(0, 1024)));
  EXPECT_EQ(j.add(1, "short"), "short");
  EXPECT_FALSE(j.add(0, std::string_view(line2500).substr(1024, 1024)));
  EXPECT_FALSE(j.add(1, std::string(1024, 'y')));
  EXPECT_EQ(j.add(0, std::string_view(line2500).substr(2048)), line2500);
  EXPECT_EQ(j.add(1, ""), std::string(1024, 'y'));  // a multiple of 1 KiB ends with an empty piece
  auto e = parse_event_line(line2500);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "step");
  EXPECT_EQ(j.add(0, std::string(1023, 'w')), std::string(1023, 'w'));
  EXPECT_EQ(j.add(0, ""), "");  // a real empty line
  EXPECT_TRUE(j.flush().empty());
}

TEST(OutputParsing, PiecesLeftWhenTheOutputEndsAreFlushedAsTheyAre) {
  LabelJoiner j;
  EXPECT_FALSE(j.add(3, std::string(1024, 'a')));
  const auto rest = j.flush();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].first, 3);
  EXPECT_EQ(rest[0].second, std::string(1024, 'a'));
  EXPECT_TRUE(j.flush().empty());
}

}  // namespace
}  // namespace grpo::supervise
