// Env mode: the torchrun environment contract (docs/bootstrap.md).
#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "backends.h"
#include "grpo/bootstrap/bootstrap.h"

namespace grpo::bootstrap {
namespace {

using core::ErrorKind;
using core::make_error;

constexpr const char* kRequiredList =
    "env bootstrap needs RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT";

// The value of a required variable; kMissingKey when unset, kInvalidValue when empty.
core::Result<std::string> required(const EnvReader& env, const char* name) {
  std::optional<std::string> value = env(name);
  if (!value)
    return make_error(ErrorKind::kMissingKey,
                      std::string(name) + " is not set (" + kRequiredList + ")");
  if (value->empty()) return make_error(ErrorKind::kInvalidValue, std::string(name) + " is empty");
  return std::move(*value);
}

// A decimal integer in [lo, hi]: digits only (no sign, no spaces), no overflow.
core::Result<int> parse_int(const char* name, const std::string& text, std::int64_t lo,
                            std::int64_t hi) {
  const std::string shown = std::string(name) + "='" + text + "'";
  if (text.empty()) return make_error(ErrorKind::kInvalidValue, std::string(name) + " is empty");
  for (char c : text) {
    if (c < '0' || c > '9') {
      return make_error(ErrorKind::kInvalidValue, shown + " is not a non-negative decimal integer");
    }
  }
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > hi) {
    return make_error(ErrorKind::kInvalidValue,
                      shown + " is out of range (at most " + std::to_string(hi) + ")");
  }
  if (value < lo) {
    return make_error(ErrorKind::kInvalidValue,
                      shown + " is out of range (at least " + std::to_string(lo) + ")");
  }
  return static_cast<int>(value);
}

core::Result<int> required_int(const EnvReader& env, const char* name, std::int64_t lo,
                               std::int64_t hi) {
  GRPO_TRY(std::string text, required(env, name));
  return parse_int(name, text, lo, hi);
}

// Optional node-rank variable: nullopt when unset, an error when set but invalid.
core::Result<std::optional<int>> optional_int(const EnvReader& env, const char* name,
                                              std::int64_t lo, std::int64_t hi) {
  std::optional<std::string> text = env(name);
  if (!text) return std::optional<int>{};
  GRPO_TRY(int value, parse_int(name, *text, lo, hi));
  return std::optional<int>{value};
}

std::string lt_message(const char* name, int value, const std::string& bound_desc, int bound) {
  return std::string(name) + "=" + std::to_string(value) + " must be < " + bound_desc + "=" +
         std::to_string(bound);
}

class EnvBootstrap final : public Bootstrap {
 public:
  explicit EnvBootstrap(WorldInfo world) : world_(std::move(world)) {}

  const WorldInfo& world() const override { return world_; }

  core::Result<Endpoint> exchange_rendezvous(std::optional<Endpoint> mine) override {
    const Endpoint& fixed = *world_.fixed_rendezvous;
    if (mine && mine->port != fixed.port) {
      return make_error(ErrorKind::kInvalidValue,
                        "rank 0 listens on " + to_string(*mine) +
                            " but MASTER_PORT=" + std::to_string(fixed.port) +
                            " (env mode: rank 0 must listen on MASTER_ADDR:MASTER_PORT)");
    }
    return fixed;
  }

  core::Status barrier() override { return core::ok_status(); }

 private:
  WorldInfo world_;
};

}  // namespace

core::Result<WorldInfo> world_from_env(const EnvReader& env, std::string hostname) {
  constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
  WorldInfo world;
  world.source = Source::kEnv;
  world.hostname = std::move(hostname);

  GRPO_TRY(world.world_size, required_int(env, env::kWorldSize, 1, kMaxInt));
  GRPO_TRY(world.global_rank, required_int(env, env::kRank, 0, kMaxInt));
  if (world.global_rank >= world.world_size) {
    return make_error(ErrorKind::kInvalidValue,
                      lt_message(env::kRank, world.global_rank, env::kWorldSize, world.world_size));
  }
  GRPO_TRY(world.local_world_size, required_int(env, env::kLocalWorldSize, 1, kMaxInt));
  if (world.local_world_size > world.world_size || world.world_size % world.local_world_size != 0) {
    return make_error(ErrorKind::kInvalidValue, std::string(env::kLocalWorldSize) + "=" +
                                                    std::to_string(world.local_world_size) +
                                                    " must divide " + env::kWorldSize + "=" +
                                                    std::to_string(world.world_size) +
                                                    " (every node runs the same number of ranks)");
  }
  GRPO_TRY(world.local_rank, required_int(env, env::kLocalRank, 0, kMaxInt));
  if (world.local_rank >= world.local_world_size) {
    return make_error(ErrorKind::kInvalidValue,
                      lt_message(env::kLocalRank, world.local_rank, env::kLocalWorldSize,
                                 world.local_world_size));
  }

  const int nodes = world.world_size / world.local_world_size;
  GRPO_TRY(std::optional<int> group_rank, optional_int(env, env::kGroupRank, 0, kMaxInt));
  GRPO_TRY(std::optional<int> node_rank, optional_int(env, env::kNodeRank, 0, kMaxInt));
  if (group_rank && node_rank && *group_rank != *node_rank) {
    return make_error(ErrorKind::kInvalidValue,
                      std::string(env::kGroupRank) + "=" + std::to_string(*group_rank) + " and " +
                          env::kNodeRank + "=" + std::to_string(*node_rank) + " disagree");
  }
  const char* node_var = group_rank ? env::kGroupRank : env::kNodeRank;
  const std::optional<int> given = group_rank ? group_rank : node_rank;
  if (given && *given >= nodes) {
    return make_error(ErrorKind::kInvalidValue,
                      lt_message(node_var, *given, "WORLD_SIZE/LOCAL_WORLD_SIZE", nodes));
  }
  world.node_rank = given ? *given : world.global_rank / world.local_world_size;

  GRPO_TRY(std::string addr, required(env, env::kMasterAddr));
  for (char c : addr) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      return make_error(ErrorKind::kInvalidValue,
                        std::string(env::kMasterAddr) + "='" + addr + "' contains whitespace");
    }
  }
  GRPO_TRY(int port, required_int(env, env::kMasterPort, 1, 65535));
  world.fixed_rendezvous = Endpoint{std::move(addr), static_cast<std::uint16_t>(port)};
  return world;
}

namespace detail {

std::unique_ptr<Bootstrap> make_env_bootstrap(WorldInfo world) {
  return std::make_unique<EnvBootstrap>(std::move(world));
}

}  // namespace detail
}  // namespace grpo::bootstrap
