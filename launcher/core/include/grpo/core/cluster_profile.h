// A cluster profile: the hardware, fabric, environment and Slurm defaults of one kind of
// allocation, plus GRPO workload defaults. Loaded from profiles/clusters/*.toml (catalog.h);
// the format is specified in docs/profile-format.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "grpo/core/checkpoint_interval.h"
#include "grpo/core/workload.h"

namespace grpo::core {

enum class DeviceVendor { kNvidia, kAscend, kCpu };
enum class IntraLink { kNvlink, kPcie, kHccs, kShm };
enum class InterFabric { kInfiniband, kRoce, kEthernet, kNone };

std::string_view to_string(DeviceVendor v);
std::string_view to_string(IntraLink l);
std::string_view to_string(InterFabric f);

struct DeviceSpec {
  std::string kind;  // "A100-SXM4-80GB"
  DeviceVendor vendor = DeviceVendor::kNvidia;
  double memory_gib = 0;        // usable device memory per device
  double peak_bf16_tflops = 0;  // dense, no sparsity
  double peak_fp16_tflops = 0;
  double peak_fp32_tflops = 0;       // 0: peak_fp16_tflops / 16 (tensor-core ratio of A100/H100)
  double memory_bandwidth_gbps = 0;  // HBM bandwidth, GB/s
  bool bf16 = true;                  // bf16 supported by the hardware
  double host_link_gbps = 25;  // host <-> device bandwidth (PCIe 4 x16 ~ 25 GB/s), for offload
};

struct NetworkSpec {
  IntraLink intra_node = IntraLink::kNvlink;
  double intra_node_gbps = 0;  // per-device bandwidth to its node peers, GB/s, one direction
  InterFabric inter_node = InterFabric::kInfiniband;
  double inter_node_gbps = 0;        // per-node aggregate across all HCAs, GB/s, one direction
  std::vector<std::string> ib_hcas;  // "mlx5_0", ...; feeds NCCL_IB_HCA
  std::string socket_ifname;  // feeds NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME / HCCL_SOCKET_IFNAME
};

struct HostSpec {
  int cpu_cores = 0;   // per node
  double ram_gib = 0;  // per node
};

struct SlurmDefaults {
  std::string partition;
  std::string account;
  std::string qos;
  std::string time = "24:00:00";
  std::string gres;  // "gpu:8"; empty: --gpus-per-node from gpus_per_node
  std::string constraint;
  std::string mem;                      // "0" means all memory on the node; empty: Slurm's default
  std::vector<std::string> extra_args;  // further #SBATCH lines, each "--flag=value"
  int signal_lead_seconds = 300;        // --signal=B:USR2@lead
};

struct ClusterProfile {
  std::string name;
  std::string description;
  std::string source_path;  // the file it was loaded from (last of the extends chain)
  int nodes = 0;
  int gpus_per_node = 0;  // devices (ranks) per node; CPU ranks for vendor cpu
  DeviceSpec device;
  NetworkSpec network;
  HostSpec host;
  std::map<std::string, std::string> env;  // NCCL_* / HCCL_* / other settings from the profile
  SlurmDefaults slurm;
  WorkloadSpec grpo;  // GRPO workload defaults
  // Mean time between failures of one node, hours (trainer.save_freq = auto's prior; the job's
  // is this / nodes until the run has seen failures of its own).
  double node_mtbf_hours = kDefaultNodeMtbfHours;
  int world_size() const { return nodes * gpus_per_node; }
};

}  // namespace grpo::core
