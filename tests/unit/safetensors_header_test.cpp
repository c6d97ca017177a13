// The safetensors header check (core/safetensors_header.h): files built here byte by byte, each
// bad one refused with one line before anything is allocated from it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "grpo/hf/safetensors_header.h"

namespace grpo::core {
namespace {

// 8 bytes little-endian length, the header, then `data_bytes` zero bytes of data.
std::string file_with(const std::string& header, std::size_t data_bytes) {
  std::string out;
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

Error refused(const std::string& file) {
  auto h = parse_safetensors_header(file, "w.safetensors");
  EXPECT_FALSE(h.ok());
  if (h.ok()) return {};
  EXPECT_EQ(h.error().kind, ErrorKind::kParse);
  const std::string line = h.error().str();
  EXPECT_EQ(line.rfind("w.safetensors: safetensors: ", 0), 0u) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  return h.error();
}

TEST(SafetensorsHeader, ReadsAValidFile) {
  // a: F32 [2, 3] = 24 bytes at [0, 24); b: BF16 [4] = 8 bytes at [24, 32); c: F16 [0] empty.
  const std::string header =
      R"({"__metadata__": {"format": "pt"},
          "b": {"dtype": "BF16", "shape": [4], "data_offsets": [24, 32]},
          "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
          "c": {"dtype": "F16", "shape": [0, 5], "data_offsets": [32, 32]}})";
  const std::string file = file_with(header, 32);
  auto h = parse_safetensors_header(file, "w.safetensors");
  ASSERT_TRUE(h.ok()) << h.error().str();
  EXPECT_EQ(h->data_start, 8 + header.size());
  ASSERT_EQ(h->tensors.size(), 3u);
  EXPECT_EQ(h->tensors[0].name, "a");  // sorted by name
  EXPECT_EQ(h->tensors[0].dtype, TensorDtype::kF32);
  EXPECT_EQ(h->tensors[0].shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(h->tensors[0].numel(), 6);
  EXPECT_EQ(h->tensors[1].name, "b");
  EXPECT_EQ(h->tensors[1].begin, 24u);
  EXPECT_EQ(h->tensors[1].dtype, TensorDtype::kBF16);
  EXPECT_EQ(h->tensors[2].numel(), 0);
  EXPECT_EQ(h->metadata.at("format"), "pt");
}

TEST(SafetensorsHeader, RefusesShortAndTruncatedFiles) {
  refused("");
  refused("1234567");
  // The header length runs past the end: 100 bytes announced, 10 present.
  std::string f = file_with(std::string(10, ' '), 0);
  f[0] = 100;
  EXPECT_NE(refused(f).message.find("past the end"), std::string::npos);
  // A length over the 100 MB limit is refused before anything else is looked at.
  std::string huge(8, '\xff');
  EXPECT_NE(refused(huge).message.find("100 MB"), std::string::npos);
  // The data section was cut short: [0, 24) announced, 20 bytes present.
  EXPECT_NE(
      refused(file_with(R"({"a": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}})", 20))
          .message.find("truncated"),
      std::string::npos);
}

TEST(SafetensorsHeader, RefusesBadEntries) {
  auto one = [](const std::string& entry, std::size_t data = 64) {
    return refused(file_with("{\"t\": " + entry + "}", data)).message;
  };
  EXPECT_NE(one(R"({"dtype": "F8_E4M3", "shape": [1], "data_offsets": [0, 1]})").find("F8_E4M3"),
            std::string::npos);
  // shape x dtype size (2 x 4 = 8) != the span (12)
  EXPECT_NE(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 12]})").find("span 12"),
            std::string::npos);
  // A product that would overflow 64 bits is caught against the file size first.
  EXPECT_NE(one(R"({"dtype": "F32", "shape": [4294967296, 4294967296, 16],
                   "data_offsets": [0, 0]})")
                .find("larger than the file"),
            std::string::npos);
  one(R"({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]})");
  one(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]})");
  one(R"({"dtype": "F32", "shape": [1], "data_offsets": [4, 0]})");
  one(R"({"dtype": "F32", "shape": [1], "data_offsets": [0]})");
  one(R"({"dtype": "F32", "shape": [1]})");
  one(R"({"dtype": 5, "shape": [1], "data_offsets": [0, 4]})");
  one(R"([1, 2])");
  refused(file_with("[1]", 0));
  refused(file_with("{\"a\": ", 0));
  refused(file_with(R"({"__metadata__": {"k": 1}})", 0));
}

TEST(SafetensorsHeader, RefusesOverlappingTensors) {
  const std::string h = R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})";
  EXPECT_NE(refused(file_with(h, 16)).message.find("overlap"), std::string::npos);
}

}  // namespace
}  // namespace grpo::core
