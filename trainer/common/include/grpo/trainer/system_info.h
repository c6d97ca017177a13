// Facts about the process and the machine the trainer logs at start and in step metrics.
// LibTorch-free.
#pragma once

#include <cstdint>
#include <string>

namespace grpo::trainer {

struct BlasInfo {
  std::string library;  // the shared object providing sgemm_ ("/usr/lib/.../libblas.so.3")
  std::string vendor;   // "OpenBLAS", "reference BLAS (netlib)", "MKL", "unknown"
  std::string config;   // openblas_get_config() when available
  int threads = -1;     // openblas_get_num_threads() when available
};

// Which BLAS is linked in, found at run time (Debian picks it with update-alternatives).
BlasInfo detect_blas();

// Peak resident set size of this process in bytes (getrusage).
std::int64_t peak_rss_bytes();

// CPUs this process may run on (sched_getaffinity), at least 1.
int available_cores();

}  // namespace grpo::trainer
