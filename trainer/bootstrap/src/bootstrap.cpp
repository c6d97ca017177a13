#include "grpo/bootstrap/bootstrap.h"

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <utility>

#include "backends.h"

namespace grpo::bootstrap {

std::string to_string(Source source) {
  switch (source) {
    case Source::kPmix:
      return "pmix";
    case Source::kEnv:
      return "env";
  }
  return "unknown";
}

std::string to_string(const Endpoint& endpoint) {
  const bool ipv6 = endpoint.host.find(':') != std::string::npos;
  std::string out = ipv6 ? "[" + endpoint.host + "]" : endpoint.host;
  return out + ":" + std::to_string(endpoint.port);
}

EnvReader process_env() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

bool pmix_advertised(const EnvReader& env) {
  // PMIx clients find their server through PMIX_NAMESPACE plus one of these URIs (v2..v4 names).
  static constexpr std::array<const char*, 8> kNames = {
      "PMIX_NAMESPACE",   "PMIX_SERVER_URI",  "PMIX_SERVER_URI2",  "PMIX_SERVER_URI21",
      "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI5"};
  for (const char* name : kNames) {
    if (env(name).has_value()) return true;
  }
  return false;
}

std::string local_hostname() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0) return {};
  return std::string(buf.data());
}

core::Result<std::unique_ptr<Bootstrap>> Bootstrap::create() {
  return create(process_env());
}

core::Result<std::unique_ptr<Bootstrap>> Bootstrap::create(const EnvReader& env) {
  std::string fallback_reason;
  if (pmix_advertised(env)) {
    auto pmix = detail::make_pmix_bootstrap();
    if (pmix.ok()) return std::move(pmix).value();
    if (pmix.error().kind != core::ErrorKind::kUnavailable) return pmix.error();
    if (!env(env::kRank).has_value() && !env(env::kWorldSize).has_value()) {
      return core::make_error(core::ErrorKind::kUnavailable,
                              "PMIx is advertised (PMIX_NAMESPACE or PMIX_SERVER_URI* set) but " +
                                  pmix.error().message +
                                  ", and RANK/WORLD_SIZE are not set for the env fallback");
    }
    fallback_reason = pmix.error().message;
  }
  auto world = world_from_env(env, local_hostname());
  if (!world.ok()) {
    core::Error error = world.error();
    if (error.kind == core::ErrorKind::kMissingKey && fallback_reason.empty() &&
        env("SLURM_PROCID").has_value()) {
      // The usual mistake: srun without --mpi=pmix (and MpiDefault=none) gives no PMIx server.
      error.message += "; SLURM_PROCID is set but PMIx is not: launch with srun --mpi=pmix";
    }
    return error;
  }
  world->pmix_fallback_reason = std::move(fallback_reason);
  return detail::make_env_bootstrap(std::move(world).value());
}

}  // namespace grpo::bootstrap
