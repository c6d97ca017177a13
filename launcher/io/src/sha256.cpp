#include "grpo/io/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <stdexcept>

namespace grpo::io {
namespace {

[[noreturn]] void fail(const char* what) {
  const unsigned long code = ERR_get_error();
  std::string msg = std::string("sha256: ") + what + " failed";
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    msg += std::string(" (") + buf + ")";
  }
  ERR_clear_error();
  throw std::runtime_error(msg);
}

}  // namespace

void Sha256::CtxFree::operator()(evp_md_ctx_st* ctx) const {
  EVP_MD_CTX_free(ctx);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) fail("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) fail("EVP_DigestInit_ex");
}

void Sha256::update(const void* data, std::size_t size) {
  if (finished_) throw std::runtime_error("sha256: update after digest");
  if (size == 0) return;
  if (EVP_DigestUpdate(ctx_.get(), data, size) != 1) fail("EVP_DigestUpdate");
}

std::array<std::uint8_t, 32> Sha256::digest() {
  if (!finished_) {
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest_.data(), &len) != 1) fail("EVP_DigestFinal_ex");
    if (len != digest_.size()) fail("EVP_DigestFinal_ex (digest length)");
    finished_ = true;
  }
  return digest_;
}

std::string Sha256::hex_digest() {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (std::uint8_t b : digest()) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

}  // namespace grpo::io
