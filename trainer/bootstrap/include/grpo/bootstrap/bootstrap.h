// How a trainer rank learns who it is and where rank 0 waits for the others, without LibTorch.
//
// Under Slurm's `srun --mpi=pmix` the identity comes from PMIx_Get, and rank 0's rendezvous
// address travels through PMIx_Put/Commit/Fence/Get: no shared file and no fixed port. Outside a
// PMIx server it falls back to the torchrun environment contract (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, optional GROUP_RANK / NODE_RANK). The contract, every
// variable and every error is specified in docs/bootstrap.md.
//
// Rank terms (global_rank, local_rank, node_rank, world_size) are those of grpo/core/glossary.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "grpo/core/result.h"

namespace grpo::bootstrap {

enum class Source { kPmix, kEnv };

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// "host:port"; an IPv6 literal host is bracketed ("[::1]:29500").
std::string to_string(const Endpoint& endpoint);

struct WorldInfo {
  Source source = Source::kEnv;
  int global_rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string hostname;
  // Set in env mode from MASTER_ADDR/MASTER_PORT: rank 0 must listen exactly there.
  // Empty under PMIx: rank 0 picks any port and publishes it with exchange_rendezvous().
  std::optional<Endpoint> fixed_rendezvous;
  // Why PMIx was advertised (PMIX_NAMESPACE set) but the env contract was used instead, e.g.
  // "PMIx_Init: UNREACHABLE"; empty when no fallback happened.
  std::string pmix_fallback_reason;
  friend bool operator==(const WorldInfo&, const WorldInfo&) = default;
};

// Reads one environment variable: nullopt when it is unset (set-but-empty is ""). Injected so that
// unit tests need no real environment.
using EnvReader = std::function<std::optional<std::string>(const char* name)>;

// The process environment (std::getenv).
EnvReader process_env();

// Names of the env-mode variables (torchrun's names).
namespace env {
inline constexpr const char* kRank = "RANK";
inline constexpr const char* kWorldSize = "WORLD_SIZE";
inline constexpr const char* kLocalRank = "LOCAL_RANK";
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr const char* kGroupRank = "GROUP_RANK";  // node_rank; optional
inline constexpr const char* kNodeRank = "NODE_RANK";    // alias of GROUP_RANK; optional
inline constexpr const char* kMasterAddr = "MASTER_ADDR";
inline constexpr const char* kMasterPort = "MASTER_PORT";
}  // namespace env

// True when `env` advertises a PMIx server: PMIX_NAMESPACE or one of the PMIX_SERVER_URI*
// variables is set. Only then does create() call PMIx_Init.
bool pmix_advertised(const EnvReader& env);

// Env mode as a pure function: validates the torchrun variables read through `env` and returns
// the WorldInfo (source kEnv, fixed_rendezvous set, hostname as given). Errors, each one line
// naming the variable: kMissingKey when a required variable is unset; kInvalidValue when a value
// is empty, not a decimal integer, out of range or inconsistent with another (RANK >= WORLD_SIZE,
// LOCAL_WORLD_SIZE not dividing WORLD_SIZE, GROUP_RANK != NODE_RANK, MASTER_PORT outside 1..65535).
// When neither GROUP_RANK nor NODE_RANK is set, node_rank = RANK / LOCAL_WORLD_SIZE.
core::Result<WorldInfo> world_from_env(const EnvReader& env, std::string hostname);

// This host's name (gethostname); "" when it cannot be read.
std::string local_hostname();

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  Bootstrap() = default;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  // create(process_env()).
  static core::Result<std::unique_ptr<Bootstrap>> create();

  // PMIx when `env` advertises a PMIx server and PMIx_Init succeeds, else the torchrun variables
  // read through `env`. PMIx itself always talks to the real process environment. Errors:
  // kMissingKey / kInvalidValue for a broken environment (see world_from_env), kUnavailable when
  // PMIx is advertised but unreachable and neither RANK nor WORLD_SIZE is set for the fallback,
  // kInternal when a PMIx server answers but lacks a job-level key.
  static core::Result<std::unique_ptr<Bootstrap>> create(const EnvReader& env);

  virtual const WorldInfo& world() const = 0;

  // Collective over all ranks. Rank 0 passes the address it listens on; the others pass nullopt.
  // Every rank returns rank 0's address. In env mode this returns fixed_rendezvous without
  // communicating (kInvalidValue when rank 0 passes a port other than MASTER_PORT). Under PMIx it
  // may be called more than once; each call publishes under a fresh key.
  virtual core::Result<Endpoint> exchange_rendezvous(std::optional<Endpoint> mine) = 0;

  // Collective barrier over all ranks (PMIx_Fence; a no-op in env mode).
  virtual core::Status barrier() = 0;
};

std::string to_string(Source source);

}  // namespace grpo::bootstrap
