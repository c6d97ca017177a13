#include "grpo/job/run_spec.h"

#include "grpo/shell/shell_quote.h"

namespace grpo::core {

namespace {

constexpr std::string_view kRunSchema = "grpo-launch/run/v1";

Error at(ErrorKind kind, std::string_view file, std::string message) {
  return make_error(kind, std::move(message), SourceLocation{std::string(file), 0, 0});
}

Result<const nlohmann::json*> member(const nlohmann::json& j, std::string_view file,
                                     const std::string& key) {
  if (!j.is_object()) return at(ErrorKind::kWrongType, file, "expected a JSON object");
  auto it = j.find(key);
  if (it == j.end()) return at(ErrorKind::kMissingKey, file, "missing key \"" + key + "\"");
  return &*it;
}

Result<std::string> get_string(const nlohmann::json& j, std::string_view file,
                               const std::string& key) {
  GRPO_TRY(const nlohmann::json* v, member(j, file, key));
  if (!v->is_string()) return at(ErrorKind::kWrongType, file, "\"" + key + "\" must be a string");
  std::string s = v->get<std::string>();
  if (has_nul(s)) return at(ErrorKind::kInvalidValue, file, "\"" + key + "\" contains NUL");
  return s;
}

Result<int> get_int(const nlohmann::json& j, std::string_view file, const std::string& key, int min,
                    int max) {
  GRPO_TRY(const nlohmann::json* v, member(j, file, key));
  if (!v->is_number_integer()) {
    return at(ErrorKind::kWrongType, file, "\"" + key + "\" must be an integer");
  }
  const auto n = v->get<long long>();
  if (n < min || n > max) {
    return at(ErrorKind::kInvalidValue, file,
              "\"" + key + "\" = " + std::to_string(n) + " is out of range (" +
                  std::to_string(min) + ".." + std::to_string(max) + ")");
  }
  return static_cast<int>(n);
}

Result<std::vector<std::string>> get_strings(const nlohmann::json& j, std::string_view file,
                                             const std::string& key) {
  GRPO_TRY(const nlohmann::json* v, member(j, file, key));
  if (!v->is_array()) {
    return at(ErrorKind::kWrongType, file, "\"" + key + "\" must be an array of strings");
  }
  std::vector<std::string> out;
  for (const auto& e : *v) {
    if (!e.is_string()) {
      return at(ErrorKind::kWrongType, file, "\"" + key + "\" must be an array of strings");
    }
    out.push_back(e.get<std::string>());
    if (has_nul(out.back())) {
      return at(ErrorKind::kInvalidValue, file, "\"" + key + "\" contains NUL");
    }
  }
  return out;
}

}  // namespace

nlohmann::json run_spec_to_json(const RunSpec& spec) {
  nlohmann::json j;
  j["schema"] = kRunSchema;
  j["run_id"] = spec.run_id;
  j["created_utc"] = spec.created_utc;
  j["profile"] = spec.profile;
  j["model"] = spec.model;
  j["version"] = spec.version;
  j["nodes"] = spec.nodes;
  j["ranks_per_node"] = spec.ranks_per_node;
  j["world_size"] = spec.world_size();
  j["cpus_per_task"] = spec.cpus_per_task;
  j["trainer_command"] = spec.trainer_command;
  j["exclude"] = spec.exclude;
  return j;
}

Result<RunSpec> run_spec_from_json(const nlohmann::json& j, std::string_view file) {
  GRPO_TRY(const std::string schema, get_string(j, file, "schema"));
  if (schema != kRunSchema) {
    return at(ErrorKind::kInvalidValue, file,
              "schema \"" + schema + "\" is not \"" + std::string(kRunSchema) + "\"");
  }
  RunSpec s;
  GRPO_TRY(s.run_id, get_string(j, file, "run_id"));
  GRPO_TRY(s.created_utc, get_string(j, file, "created_utc"));
  GRPO_TRY(s.profile, get_string(j, file, "profile"));
  GRPO_TRY(s.model, get_string(j, file, "model"));
  GRPO_TRY(s.version, get_string(j, file, "version"));
  GRPO_TRY(s.nodes, get_int(j, file, "nodes", 1, 16384));
  GRPO_TRY(s.ranks_per_node, get_int(j, file, "ranks_per_node", 1, 1024));
  GRPO_TRY(const int world, get_int(j, file, "world_size", 1, 16384 * 1024));
  if (world != s.world_size()) {
    return at(ErrorKind::kInvalidValue, file,
              "\"world_size\" = " + std::to_string(world) +
                  " is not nodes x ranks_per_node = " + std::to_string(s.world_size()));
  }
  GRPO_TRY(s.cpus_per_task, get_int(j, file, "cpus_per_task", 0, 65535));
  GRPO_TRY(s.trainer_command, get_strings(j, file, "trainer_command"));
  if (s.trainer_command.empty() || s.trainer_command.front().empty()) {
    return at(ErrorKind::kInvalidValue, file, "\"trainer_command\" is empty");
  }
  GRPO_TRY(s.exclude, get_strings(j, file, "exclude"));
  for (const auto& node : s.exclude) {
    if (node.empty() || node.find_first_of(", \t\n") != std::string::npos) {
      return at(ErrorKind::kInvalidValue, file, "\"exclude\" has a bad node name \"" + node + "\"");
    }
  }
  return s;
}

Result<EnvMap> job_env_from_json(const nlohmann::json& env_json, std::string_view file) {
  GRPO_TRY(const nlohmann::json* job, member(env_json, file, "job"));
  if (!job->is_object()) return at(ErrorKind::kWrongType, file, "\"job\" must be an object");
  EnvMap out;
  for (const auto& [name, value] : job->items()) {
    if (!is_env_name(name)) {
      return at(ErrorKind::kInvalidValue, file, "\"job\" has a bad variable name \"" + name + "\"");
    }
    if (!value.is_string()) {
      return at(ErrorKind::kWrongType, file, "\"job\"." + name + " must be a string");
    }
    out[name] = value.get<std::string>();
    if (has_nul(out[name])) {
      return at(ErrorKind::kInvalidValue, file, "\"job\"." + name + " contains NUL");
    }
  }
  return out;
}

Result<RankMapShape> rank_map_shape_from_json(const nlohmann::json& j, std::string_view file) {
  RankMapShape shape;
  GRPO_TRY(shape.nodes, get_int(j, file, "nodes", 1, 16384));
  GRPO_TRY(shape.ranks_per_node, get_int(j, file, "ranks_per_node", 1, 1024));
  GRPO_TRY(const nlohmann::json* ranks, member(j, file, "ranks"));
  if (!ranks->is_array()) return at(ErrorKind::kWrongType, file, "\"ranks\" must be an array");
  if (static_cast<long long>(ranks->size()) !=
      static_cast<long long>(shape.nodes) * shape.ranks_per_node) {
    return at(ErrorKind::kInvalidValue, file,
              "\"ranks\" has " + std::to_string(ranks->size()) +
                  " entries, expected nodes x "
                  "ranks_per_node = " +
                  std::to_string(shape.nodes * shape.ranks_per_node));
  }
  return shape;
}

}  // namespace grpo::core
