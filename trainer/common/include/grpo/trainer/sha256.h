// SHA-256 lives in grpo_io (grpo/io/sha256.h: libcrypto's EVP digest), shared with grpo-launch
// export, which verifies checkpoint manifests without linking the trainer. The trainer's names.
#pragma once

#include "grpo/io/sha256.h"

namespace grpo::trainer {

using io::Sha256;
using io::sha256_hex;

}  // namespace grpo::trainer
