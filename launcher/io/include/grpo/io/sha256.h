// SHA-256 (FIPS 180-4), for checkpoint manifests and weight checksums: OpenSSL's libcrypto
// (the EVP digest API) does the hashing; the trainer and `grpo-launch export` share it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX; <openssl/evp.h> stays out of this header

namespace grpo::io {

// Incremental hasher. Move-only. A libcrypto failure (out of memory, no SHA-256 in the loaded
// providers) throws std::runtime_error; so does update() after digest().
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<std::uint8_t, 32> digest();  // finishes; the object must not be updated after
  std::string hex_digest();               // lowercase hex of digest()

 private:
  struct CtxFree {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;
  bool finished_ = false;
  std::array<std::uint8_t, 32> digest_{};  // valid once finished_
};

std::string sha256_hex(std::string_view data);

}  // namespace grpo::io
