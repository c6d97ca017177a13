// TensorBoard event files (launcher/tensorboard, docs/tensorboard.md): the CRC, the record
// framing and the Event encoding against bytes derived by hand or by an independent
// implementation; the writer's file against the same rules. The whole-run check, decoding the
// trainer's files with python3-protobuf and python3-crc32c, is tests/trainer/tensorboard_reader.py.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "grpo/io/files.h"
#include "grpo/tensorboard/event_file.h"

namespace tb = grpo::tensorboard;

namespace {

std::string bytes(std::initializer_list<unsigned> b) {
  std::string s;
  for (unsigned v : b) s += static_cast<char>(v);
  return s;
}

std::string le32(std::uint32_t v) {
  return bytes({v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24});
}

}  // namespace

TEST(TensorBoard, Crc32cCheckValues) {
  // The standard check value of CRC-32C (Castagnoli), e.g. RFC 3720 / the CRC catalogue.
  EXPECT_EQ(tb::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(tb::crc32c(""), 0u);
  // RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA.
  EXPECT_EQ(tb::crc32c(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(TensorBoard, MaskedCrc) {
  // crc = 0xE3069283. crc >> 15 = 0x0001C60D; crc << 17 keeps the low 15 bits 0x1283 shifted:
  // 0x25060000. OR: 0x2507C60D; + 0xA282EAD8 = 0xC78AB0E5 (mod 2^32).
  EXPECT_EQ(tb::masked_crc32c("123456789"), 0xC78AB0E5u);
  // crc 0: the mask's constant alone.
  EXPECT_EQ(tb::masked_crc32c(""), 0xA282EAD8u);
}

TEST(TensorBoard, RecordFraming) {
  // Data "123456789" (9 bytes): length 09 00 00 00 00 00 00 00; the masked CRC of those 8 bytes
  // is 0x3971F937 (crc32c 0x872FCB77 from python3-crc32c, masked as above); then the data; then
  // its masked CRC 0xC78AB0E5 (MaskedCrc).
  const std::string want =
      bytes({9, 0, 0, 0, 0, 0, 0, 0}) + le32(0x3971F937u) + "123456789" + le32(0xC78AB0E5u);
  EXPECT_EQ(tb::frame_record("123456789"), want);
  // An empty record: length 0 (crc32c of 8 zero bytes, masked), no data, the bare mask.
  const std::string empty = tb::frame_record("");
  ASSERT_EQ(empty.size(), 16u);
  EXPECT_EQ(empty.substr(12), le32(0xA282EAD8u));
}

TEST(TensorBoard, ScalarEventEncoding) {
  // Event{wall_time=1.5 (field 1, fixed64), step=3 (field 2, varint),
  //       summary (field 5) {value (field 1) {tag="a" (field 1), simple_value=0.5f (field 2)}}}
  //   09 | 00 00 00 00 00 00 F8 3F      1.5 = 0x3FF8000000000000 little-endian
  //   10 03
  //   2A 0A | 0A 08 | 0A 01 61 | 15 00 00 00 3F     0.5f = 0x3F000000
  const std::string want =
      bytes({0x09, 0,    0,    0,    0,    0,    0,    0xF8, 0x3F, 0x10, 0x03, 0x2A,
             0x0A, 0x0A, 0x08, 0x0A, 0x01, 0x61, 0x15, 0,    0,    0,    0x3F});
  EXPECT_EQ(tb::scalars_event(1.5, 3, {{"a", 0.5}}), want);
}

TEST(TensorBoard, ZeroScalarIsWritten) {
  // simple_value is in TensorFlow's `oneof value`: a 0 is written (15 00 00 00 00), not left out
  // as a plain proto3 float would be. Step 0 and wall time 0 are left out (plain fields).
  // Value: 0A 01 62 | 15 00 00 00 00 (8 bytes); Summary: 0A 08 + Value (10 bytes); Event: 2A 0A.
  const std::string want = bytes({0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01, 0x62, 0x15, 0, 0, 0, 0});
  EXPECT_EQ(tb::scalars_event(0.0, 0, {{"b", 0.0}}), want);
}

TEST(TensorBoard, FileVersionEventEncoding) {
  // proto3 leaves out wall_time = 0 and step = 0: only field 3 (string), 1A, length 13.
  EXPECT_EQ(tb::file_version_event(0.0), bytes({0x1A, 13}) + "brain.Event:2");
}

TEST(TensorBoard, FileName) {
  EXPECT_EQ(tb::event_file_name(1700000000, "node1", 42, "trainer"),
            "events.out.tfevents.1700000000.node1.42.trainer");
  EXPECT_EQ(tb::event_file_name(5, "h", 1, ""), "events.out.tfevents.0000000005.h.1");
}

TEST(TensorBoard, WriterFileHoldsFramedRecords) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("grpo-tb-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  auto w = tb::EventFileWriter::create(dir / "tensorboard", "trainer");
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_TRUE(w->write_scalars(7, {{"x", 2.0}, {"y", -1.0}}).ok());
  ASSERT_TRUE(w->write_scalars(8, {}).ok());  // nothing written
  const std::string name = w->path().filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u);
  EXPECT_NE(name.find(".trainer"), std::string::npos);
  auto text = grpo::io::read_file(w->path());
  ASSERT_TRUE(text.ok());
  // Two records: walk the framing by its lengths, checking both CRCs of each.
  std::size_t pos = 0;
  int records = 0;
  while (pos < text->size()) {
    ASSERT_GE(text->size() - pos, 12u);
    std::uint64_t len = 0;
    for (int i = 0; i < 8; ++i) {
      len |= static_cast<std::uint64_t>(static_cast<unsigned char>((*text)[pos + i])) << (8 * i);
    }
    EXPECT_EQ(text->substr(pos + 8, 4), le32(tb::masked_crc32c(text->substr(pos, 8))));
    ASSERT_GE(text->size() - pos, 16 + len);
    EXPECT_EQ(text->substr(pos + 12 + len, 4),
              le32(tb::masked_crc32c(text->substr(pos + 12, len))));
    if (records == 0) {
      EXPECT_NE(text->substr(pos + 12, len).find("brain.Event:2"), std::string::npos);
    }
    pos += 16 + len;
    ++records;
  }
  EXPECT_EQ(records, 2);
  // A second writer of the same process and second gets its own file.
  auto w2 = tb::EventFileWriter::create(dir / "tensorboard", "trainer");
  ASSERT_TRUE(w2.ok());
  EXPECT_NE(w2->path(), w->path());
  std::filesystem::remove_all(dir);
}
