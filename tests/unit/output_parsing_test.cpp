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

using Lines = std::vector<std::string>;

TEST(OutputParsing, LongLinesArePutBackTogetherPerRank) {
  const std::string line2500 =
      "{\"type\":\"step\",\"pad\":\"" + std::string(2500 - 24, 'x') + "\"}";
  ASSERT_EQ(line2500.size(), 2500u);
  LabelJoiner j;
  // Rank 0's three pieces, interleaved with rank 1's short line and its 1,024-byte line.
  EXPECT_EQ(j.add(0, std::string_view(line2500).substr(0, 1024)), Lines{});
  EXPECT_EQ(j.add(1, "short"), Lines{"short"});
  EXPECT_EQ(j.add(0, std::string_view(line2500).substr(1024, 1024)), Lines{});
  EXPECT_EQ(j.add(1, std::string(1024, 'y')), Lines{});
  EXPECT_EQ(j.add(0, std::string_view(line2500).substr(2048)), Lines{line2500});
  // A multiple of 1 KiB ends with an empty piece (srun 22.05 on the test cluster prints "1: ").
  EXPECT_EQ(j.add(1, ""), Lines{std::string(1024, 'y')});
  auto e = parse_event_line(line2500);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "step");
  EXPECT_EQ(j.add(0, std::string(1023, 'w')), Lines{std::string(1023, 'w')});
  EXPECT_EQ(j.add(0, ""), Lines{""});  // a real empty line
  EXPECT_TRUE(j.flush().empty());
}

// A telemetry line of exactly 2 KiB, then the next event, with no empty piece between them: the
// held line once swallowed the next one (both lost as telemetry). "}{" is never inside JSON.
TEST(OutputParsing, ALineOfExactlyKKibDoesNotSwallowTheNextEvent) {
  const std::string exact = "{\"type\":\"note\",\"pad\":\"" + std::string(2048 - 24, 'p') + "\"}";
  ASSERT_EQ(exact.size(), 2048u);
  LabelJoiner j;
  EXPECT_EQ(j.add(0, std::string_view(exact).substr(0, 1024)), Lines{});
  EXPECT_EQ(j.add(0, std::string_view(exact).substr(1024)), Lines{});
  const Lines got = j.add(0, "{\"type\":\"heartbeat\"}");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], exact);
  EXPECT_TRUE(parse_event_line(got[0]));
  EXPECT_EQ(got[1], "{\"type\":\"heartbeat\"}");
  // The same when the next line is itself a piece: the held line goes, the new one waits.
  EXPECT_EQ(j.add(1, std::string_view(exact).substr(0, 1024)), Lines{});
  EXPECT_EQ(j.add(1, std::string_view(exact).substr(1024)), Lines{});
  EXPECT_EQ(j.add(1, std::string_view(exact).substr(0, 1024)), Lines{exact});
  EXPECT_EQ(j.add(1, std::string_view(exact).substr(1024)), Lines{});
  EXPECT_EQ(j.add(1, ""), Lines{exact});
  // Text that is not JSON is joined as srun cut it ('}' then '{' inside one line of a program).
  EXPECT_EQ(j.add(2, std::string(1023, 'a') + "}"), Lines{});
  EXPECT_EQ(j.add(2, "tail"), Lines{std::string(1023, 'a') + "}tail"});
}

// A rank that never ends its line (a progress bar redrawn with \r) comes out as 1 KiB pieces for
// the whole run: the joiner holds at most kMaxJoinedLine bytes, then delivers them as a line.
TEST(OutputParsing, ALineThatNeverEndsIsDeliveredAtTheCap) {
  LabelJoiner j;
  const std::string piece(1024, '\r');
  std::size_t delivered = 0;
  for (std::size_t n = 0; n < 3 * (kMaxJoinedLine / 1024) + 5; ++n) {
    for (const auto& line : j.add(0, piece)) {
      EXPECT_EQ(line.size(), kMaxJoinedLine);
      ++delivered;
    }
  }
  EXPECT_EQ(delivered, 3u);
  const auto rest = j.flush();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].second.size(), 5u * 1024);
}

TEST(OutputParsing, PiecesLeftWhenTheOutputEndsAreFlushedAsTheyAre) {
  LabelJoiner j;
  EXPECT_EQ(j.add(3, std::string(1024, 'a')), Lines{});
  const auto rest = j.flush();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].first, 3);
  EXPECT_EQ(rest[0].second, std::string(1024, 'a'));
  EXPECT_TRUE(j.flush().empty());
}

}  // namespace
}  // namespace grpo::supervise
