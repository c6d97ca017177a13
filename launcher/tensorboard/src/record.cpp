// The TFRecord framing of TensorBoard event files (docs/tensorboard.md "Records"). The only
// translation unit that includes ISA-L: crc32_iscsi is the CRC-32C (iSCSI, RFC 3720) of the
// framing; it neither inverts its input nor its result, so both are done here.
#include <isa-l/crc.h>

#include <climits>

#include "grpo/tensorboard/event_file.h"

namespace grpo::tensorboard {
namespace {

void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xffu);
}

}  // namespace

std::uint32_t crc32c(std::string_view data) {
  // crc32_iscsi takes an int length: feed larger inputs in pieces (the CRC state carries over).
  unsigned int crc = 0xffffffffu;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data()));
  std::size_t left = data.size();
  while (left > 0) {
    const std::size_t n = left < static_cast<std::size_t>(INT_MAX) ? left : INT_MAX;
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    left -= n;
  }
  return crc ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(std::string_view data) {
  const std::uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string frame_record(std::string_view data) {
  std::string length;
  put_le(length, data.size(), 8);
  std::string out = length;
  put_le(out, masked_crc32c(length), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

}  // namespace grpo::tensorboard
