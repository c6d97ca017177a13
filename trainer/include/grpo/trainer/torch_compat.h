// Every difference between the LibTorch versions we build against (Debian's 1.13 on CPU, 2.x with
// CUDA) lives here and nowhere else. Include this instead of <torch/torch.h> in trainer sources.
// c10d (distributed) declarations are pulled in only when GRPO_COMPAT_C10D is defined before the
// include, so that only the communicator pays for those headers.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <mutex>
#include <string>

#define GRPO_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||       \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if defined(GRPO_COMPAT_C10D)
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#if defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

namespace grpo::trainer::compat {

inline std::string torch_version() {
  return TORCH_VERSION;
}

// A CPU generator seeded explicitly (never the global default one).
inline at::Generator make_cpu_generator(std::uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

// The generator's full state as a uint8 tensor, and back. Byte layout is LibTorch's own.
inline at::Tensor generator_state(at::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}
inline void set_generator_state(at::Generator& gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

// The message of a c10 error without LibTorch's C++ backtrace.
inline std::string error_text(const c10::Error& e) {
  return e.what_without_backtrace();
}

// Whether a c10 error is an allocation failure: c10::OutOfMemoryError (CUDA, and CPU since 2.x)
// or the CPU allocator's "can't allocate memory" enforce failure (1.13).
inline bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  const std::string msg = e.what_without_backtrace();
  return msg.find("out of memory") != std::string::npos ||
         msg.find("can't allocate memory") != std::string::npos;
}

// Whether LibTorch was built with CUDA and a device is present.
inline bool cuda_available() {
  return torch::cuda::is_available();
}

// The CUDA device of a rank: its local rank modulo the devices this process sees (one GPU per
// rank of a node; with CUDA_VISIBLE_DEVICES narrowed to one GPU per task, always device 0).
inline at::Device cuda_device(int local_rank) {
  const auto n = static_cast<int>(torch::cuda::device_count());
  return {at::kCUDA, static_cast<c10::DeviceIndex>(n > 0 ? local_rank % n : 0)};
}

#if defined(GRPO_COMPAT_C10D)
// c10d's process group type: ProcessGroupGloo derives from ProcessGroup in 1.13 and from
// c10d::Backend in 2.x; both offer allreduce/broadcast/barrier with the same signatures.
using GlooGroup = c10d::ProcessGroupGloo;
#if GRPO_TORCH_AT_LEAST(2, 0)
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

#endif

}  // namespace grpo::trainer::compat
