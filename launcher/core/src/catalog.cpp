#include "grpo/core/catalog.h"

#include <algorithm>
#include <limits>

#include "grpo/core/hf_config.h"
#include "grpo/core/owned_env.h"
#include "grpo/core/text.h"
#include "grpo/core/toml_reader.h"

namespace grpo::core {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr int kMaxExtendsDepth = 16;

// Child values replace parent values; tables merge key by key; arrays are replaced whole.
void merge_into(TomlValue& base, const TomlValue& overlay) {
  if (!base.is_table() || !overlay.is_table()) {
    base = overlay;
    return;
  }
  auto& bt = base.as_table();
  for (const auto& [k, v] : overlay.as_table()) {
    auto it = bt.find(k);
    if (it != bt.end() && it->second.is_table() && v.is_table()) {
      merge_into(it->second, v);
    } else {
      bt[k] = v;
    }
  }
}

// Loads `name` and its `extends` ancestors, merged base-first.
Result<TomlValue> load_merged(const SourceProvider& provider, CatalogKind kind,
                              std::string_view name, std::vector<std::string>& chain,
                              std::string& last_path) {
  if (std::find(chain.begin(), chain.end(), name) != chain.end()) {
    std::string cycle;
    for (const auto& c : chain) cycle += c + " -> ";
    return make_error(ErrorKind::kCycle, "cyclic 'extends': " + cycle + std::string(name));
  }
  if (chain.size() >= kMaxExtendsDepth) {
    return make_error(ErrorKind::kCycle, "'extends' chain deeper than 16 at " + std::string(name));
  }
  GRPO_TRY(SourceFile file, provider.find(kind, name));
  GRPO_TRY(TomlValue doc, parse_toml(file.text, file.path));
  if (!doc.is_table()) return make_error(ErrorKind::kParse, "not a TOML table", {file.path, 1, 1});
  chain.emplace_back(name);
  if (last_path.empty()) last_path = file.path;
  auto& table = doc.as_table();
  const auto ext = table.find("extends");
  if (ext == table.end()) return doc;
  if (!ext->second.is_string()) {
    return make_error(ErrorKind::kWrongType, "extends: expected a string naming a profile",
                      location_of(ext->second));
  }
  const std::string parent_name = ext->second.as_string().str;
  auto parent = load_merged(provider, kind, parent_name, chain, last_path);
  if (!parent.ok()) {
    Error e = parent.error();
    if (e.kind == ErrorKind::kNotFound) {
      e.message = "extends \"" + parent_name + "\": " + e.message;
      e.where = location_of(ext->second);
    }
    return e;
  }
  TomlValue merged = std::move(parent).value();
  table.erase("extends");
  merge_into(merged, doc);
  return merged;
}

Status set_dotted(TomlValue& root, const Override& o) {
  // Parse the value as TOML; fall back to a bare string.
  const std::string origin = "--set " + o.key + "=" + o.value;
  TomlValue value;
  auto parsed = parse_toml("v = " + o.value, origin);
  if (parsed.ok() && parsed->is_table() && parsed->as_table().count("v") == 1) {
    value = parsed->as_table().at("v");
  } else {
    auto as_string = parse_toml("v = " + toml::format(TomlValue(o.value)), origin);
    if (!as_string.ok()) return make_error(ErrorKind::kInvalidValue, origin + ": cannot be read");
    value = as_string->as_table().at("v");
  }
  TomlValue* node = &root;
  std::string_view rest = o.key;
  while (true) {
    const auto dot = rest.find('.');
    const std::string part(rest.substr(0, dot));
    if (part.empty()) return make_error(ErrorKind::kInvalidValue, origin + ": empty key component");
    if (!node->is_table()) {
      return make_error(ErrorKind::kInvalidValue,
                        origin + ": '" + part + "' is inside a value that is not a table");
    }
    auto& t = node->as_table();
    if (dot == std::string_view::npos) {
      t[part] = value;
      return ok_status();
    }
    auto it = t.find(part);
    if (it == t.end()) it = t.emplace(part, TomlValue(toml::table{})).first;
    node = &it->second;
    rest.remove_prefix(dot + 1);
  }
}

const std::vector<std::string> kVendors = {"nvidia", "ascend", "cpu"};
const std::vector<std::string> kIntraLinks = {"nvlink", "pcie", "hccs", "shm"};
const std::vector<std::string> kInterFabrics = {"infiniband", "roce", "ethernet", "none"};
const std::vector<std::string> kDtypes = {"bf16", "fp16", "fp32"};

template <typename E>
E pick(const std::string& s, const std::vector<std::string>& names) {
  const auto it = std::find(names.begin(), names.end(), s);
  return static_cast<E>(it - names.begin());
}

Status read_workload(TableReader& r, WorkloadSpec& w) {
  GRPO_TRY_STATUS(r.read_int("train_batch_size", w.train_batch_size, 1, kMaxInt));
  GRPO_TRY_STATUS(r.read_int("rollout_n", w.rollout_n, 1, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("ppo_mini_batch_size", w.ppo_mini_batch_size, 1, kMaxInt));
  GRPO_TRY_STATUS(r.read_int("max_prompt_length", w.max_prompt_length, 1, 1 << 24));
  GRPO_TRY_STATUS(r.read_int("max_response_length", w.max_response_length, 1, 1 << 24));
  GRPO_TRY_STATUS(r.read_int("ppo_epochs", w.ppo_epochs, 1, 1000));
  GRPO_TRY_STATUS(r.read_positive("gpu_memory_utilization", w.gpu_memory_utilization, false));
  if (w.gpu_memory_utilization > 1.0) {
    return make_error(ErrorKind::kInvalidValue,
                      r.path() + "gpu_memory_utilization: must be at most 1.0",
                      r.where("gpu_memory_utilization"));
  }
  GRPO_TRY_STATUS(r.read_int("max_num_seqs", w.max_num_seqs, 1, 1 << 20));
  GRPO_TRY_STATUS(r.read("use_kl_loss", w.use_kl_loss));
  std::string dtype(to_string(w.dtype));
  GRPO_TRY_STATUS(r.read_enum("dtype", dtype, kDtypes));
  w.dtype = pick<Dtype>(dtype, kDtypes);
  GRPO_TRY_STATUS(r.read("fused_logprob", w.fused_logprob));
  GRPO_TRY_STATUS(r.read("remove_padding", w.remove_padding));
  GRPO_TRY_STATUS(r.read_int("max_token_len_per_gpu", w.max_token_len_per_gpu, 0, 1 << 30));
  GRPO_TRY_STATUS(r.read("entropy_chunking", w.entropy_chunking));
  GRPO_TRY_STATUS(r.read("free_cache_engine", w.free_cache_engine));
  GRPO_TRY_STATUS(r.read_positive("achievable_mfu", w.achievable_mfu, false));
  if (w.achievable_mfu > 1.0) {
    return make_error(ErrorKind::kInvalidValue, r.path() + "achievable_mfu: must be at most 1.0",
                      r.where("achievable_mfu"));
  }
  GRPO_TRY_STATUS(r.read_positive("memory_headroom", w.memory_headroom, true));
  if (w.memory_headroom >= 0.5) {
    return make_error(ErrorKind::kInvalidValue, r.path() + "memory_headroom: must be below 0.5",
                      r.where("memory_headroom"));
  }
  return r.finish();
}

Result<ClusterProfile> cluster_from_toml(const TomlValue& doc, std::string source_path) {
  ClusterProfile p;
  p.source_path = std::move(source_path);
  TableReader r(doc, "");
  r.ignore("extends");
  GRPO_TRY_STATUS(r.read("name", p.name, true));
  GRPO_TRY_STATUS(r.read("description", p.description));
  GRPO_TRY_STATUS(r.read_int("nodes", p.nodes, 1, 16384, true));
  GRPO_TRY_STATUS(r.read_int("gpus_per_node", p.gpus_per_node, 1, 128, true));
  GRPO_TRY_STATUS(r.read_positive("node_mtbf_hours", p.node_mtbf_hours, false));

  GRPO_TRY(const TomlValue* device, r.table("device"));
  if (device == nullptr)
    return make_error(ErrorKind::kMissingKey, "[device] table is missing", r.where());
  {
    TableReader d(*device, "device.");
    GRPO_TRY_STATUS(d.read("kind", p.device.kind, true));
    std::string vendor = "nvidia";
    GRPO_TRY_STATUS(d.read_enum("vendor", vendor, kVendors, true));
    p.device.vendor = pick<DeviceVendor>(vendor, kVendors);
    GRPO_TRY_STATUS(d.read_positive("memory_gib", p.device.memory_gib, false, true));
    GRPO_TRY_STATUS(d.read_positive("peak_bf16_tflops", p.device.peak_bf16_tflops, true));
    GRPO_TRY_STATUS(d.read_positive("peak_fp16_tflops", p.device.peak_fp16_tflops, false, true));
    GRPO_TRY_STATUS(d.read_positive("peak_fp32_tflops", p.device.peak_fp32_tflops, false));
    GRPO_TRY_STATUS(
        d.read_positive("memory_bandwidth_gbps", p.device.memory_bandwidth_gbps, false, true));
    GRPO_TRY_STATUS(d.read("bf16", p.device.bf16, true));
    GRPO_TRY_STATUS(d.read_positive("host_link_gbps", p.device.host_link_gbps, false));
    if (p.device.bf16 && p.device.peak_bf16_tflops <= 0) {
      return make_error(ErrorKind::kInvalidValue,
                        "device.peak_bf16_tflops: must be positive when device.bf16 = true",
                        d.where("bf16"));
    }
    GRPO_TRY_STATUS(d.finish());
  }
  GRPO_TRY(const TomlValue* network, r.table("network"));
  if (network == nullptr)
    return make_error(ErrorKind::kMissingKey, "[network] table is missing", r.where());
  {
    TableReader n(*network, "network.");
    std::string intra = "nvlink";
    GRPO_TRY_STATUS(n.read_enum("intra_node", intra, kIntraLinks, true));
    p.network.intra_node = pick<IntraLink>(intra, kIntraLinks);
    GRPO_TRY_STATUS(n.read_positive("intra_node_gbps", p.network.intra_node_gbps, false, true));
    std::string inter = "infiniband";
    GRPO_TRY_STATUS(n.read_enum("inter_node", inter, kInterFabrics, true));
    p.network.inter_node = pick<InterFabric>(inter, kInterFabrics);
    const bool need_inter = p.network.inter_node != InterFabric::kNone;
    GRPO_TRY_STATUS(
        n.read_positive("inter_node_gbps", p.network.inter_node_gbps, !need_inter, need_inter));
    GRPO_TRY_STATUS(n.read("ib_hcas", p.network.ib_hcas));
    GRPO_TRY_STATUS(n.read("socket_ifname", p.network.socket_ifname));
    GRPO_TRY_STATUS(n.finish());
    if (!need_inter && p.nodes > 1) {
      return make_error(ErrorKind::kInvalidValue,
                        "network.inter_node = \"none\" with nodes = " + std::to_string(p.nodes) +
                            ": several nodes need an inter-node fabric",
                        n.where("inter_node"));
    }
  }
  GRPO_TRY(const TomlValue* host, r.table("host"));
  if (host != nullptr) {
    TableReader h(*host, "host.");
    GRPO_TRY_STATUS(h.read_int("cpu_cores", p.host.cpu_cores, 1, 1 << 20));
    GRPO_TRY_STATUS(h.read_positive("ram_gib", p.host.ram_gib, false));
    GRPO_TRY_STATUS(h.finish());
  }
  GRPO_TRY_STATUS(r.read("env", p.env));
  // grpo-launch's own variables would change what the launcher does, not what the job sees
  // (docs/security.md).
  for (const auto& [name, value] : p.env) {
    if (is_launcher_owned_env(name)) {
      return make_error(ErrorKind::kInvalidValue,
                        "env." + name + ": grpo-launch sets this variable itself; a profile cannot",
                        r.where("env"));
    }
  }
  GRPO_TRY(const TomlValue* slurm, r.table("slurm"));
  if (slurm != nullptr) {
    TableReader s(*slurm, "slurm.");
    GRPO_TRY_STATUS(s.read("partition", p.slurm.partition));
    GRPO_TRY_STATUS(s.read("account", p.slurm.account));
    GRPO_TRY_STATUS(s.read("qos", p.slurm.qos));
    GRPO_TRY_STATUS(s.read("time", p.slurm.time));
    GRPO_TRY_STATUS(s.read("gres", p.slurm.gres));
    GRPO_TRY_STATUS(s.read("constraint", p.slurm.constraint));
    GRPO_TRY_STATUS(s.read("mem", p.slurm.mem));
    GRPO_TRY_STATUS(s.read("extra_args", p.slurm.extra_args));
    GRPO_TRY_STATUS(s.read_int("signal_lead_seconds", p.slurm.signal_lead_seconds, 0, 86400));
    GRPO_TRY_STATUS(s.finish());
  }
  GRPO_TRY(const TomlValue* grpo, r.table("grpo"));
  if (grpo != nullptr) {
    TableReader g(*grpo, "grpo.");
    GRPO_TRY_STATUS(read_workload(g, p.grpo));
  }
  GRPO_TRY_STATUS(r.finish());
  if (p.grpo.ppo_mini_batch_size > p.grpo.train_batch_size) {
    return make_error(ErrorKind::kInvalidValue,
                      "grpo.ppo_mini_batch_size (" + std::to_string(p.grpo.ppo_mini_batch_size) +
                          ") exceeds grpo.train_batch_size (" +
                          std::to_string(p.grpo.train_batch_size) + ")",
                      r.where("grpo"));
  }
  return p;
}

Result<ModelSpec> model_from_toml(const TomlValue& doc) {
  ModelSpec m;
  TableReader r(doc, "");
  r.ignore("extends");
  GRPO_TRY_STATUS(r.read("name", m.name, true));
  GRPO_TRY_STATUS(r.read("hf_id", m.hf_id));
  GRPO_TRY_STATUS(r.read("source", m.source));
  GRPO_TRY_STATUS(r.read_int("published_params", m.published_params, 0, kMaxInt));
  constexpr std::int64_t kBig = std::int64_t{1} << 24;
  GRPO_TRY_STATUS(r.read_int("hidden_size", m.hidden_size, 1, kBig, true));
  GRPO_TRY_STATUS(r.read_int("num_layers", m.num_layers, 1, 1 << 16, true));
  GRPO_TRY_STATUS(r.read_int("num_attention_heads", m.num_attention_heads, 1, 1 << 16, true));
  GRPO_TRY_STATUS(r.read_int("num_kv_heads", m.num_kv_heads, 1, 1 << 16, true));
  m.head_dim = m.hidden_size / m.num_attention_heads;
  GRPO_TRY_STATUS(r.read_int("head_dim", m.head_dim, 1, 1 << 16));
  GRPO_TRY_STATUS(r.read_int("ffn_hidden_size", m.ffn_hidden_size, 1, kBig, true));
  GRPO_TRY_STATUS(r.read_int("vocab_size", m.vocab_size, 1, kBig, true));
  GRPO_TRY_STATUS(r.read("tied_embeddings", m.tied_embeddings));
  GRPO_TRY_STATUS(r.read("qkv_bias", m.qkv_bias));
  GRPO_TRY_STATUS(r.read("qk_norm", m.qk_norm));
  GRPO_TRY_STATUS(r.read_positive("rope_theta", m.rope_theta, false));
  GRPO_TRY_STATUS(r.read_positive("rms_norm_eps", m.rms_norm_eps, false));
  GRPO_TRY_STATUS(r.read_int("max_position_embeddings", m.max_position_embeddings, 0, kBig));
  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return make_error(ErrorKind::kInvalidValue,
                      "num_attention_heads (" + std::to_string(m.num_attention_heads) +
                          ") must be a multiple of num_kv_heads (" +
                          std::to_string(m.num_kv_heads) + ")",
                      r.where("num_kv_heads"));
  }
  GRPO_TRY(const TomlValue* moe, r.table("moe"));
  if (moe != nullptr) {
    TableReader e(*moe, "moe.");
    GRPO_TRY_STATUS(e.read_int("num_experts", m.num_experts, 1, 1 << 16, true));
    GRPO_TRY_STATUS(e.read_int("experts_per_token", m.experts_per_token, 1, m.num_experts, true));
    GRPO_TRY_STATUS(e.read_int("moe_ffn_hidden_size", m.moe_ffn_hidden_size, 1, kBig, true));
    GRPO_TRY_STATUS(e.read_int("num_shared_experts", m.num_shared_experts, 0, 1 << 10));
    GRPO_TRY_STATUS(
        e.read_int("shared_expert_ffn_hidden_size", m.shared_expert_ffn_hidden_size, 0, kBig));
    GRPO_TRY_STATUS(e.read("shared_expert_gate", m.shared_expert_gate));
    GRPO_TRY_STATUS(e.read("norm_topk_prob", m.norm_topk_prob));
    GRPO_TRY_STATUS(e.read_int("first_k_dense_layers", m.first_k_dense_layers, 0, m.num_layers));
    GRPO_TRY_STATUS(e.finish());
    if (m.num_shared_experts > 0 && m.shared_expert_ffn_hidden_size == 0) {
      return make_error(
          ErrorKind::kInvalidValue,
          "moe.shared_expert_ffn_hidden_size: must be positive when num_shared_experts > 0",
          e.where("num_shared_experts"));
    }
  }
  GRPO_TRY(const TomlValue* vision, r.table("vision"));
  if (vision != nullptr) {
    TableReader v(*vision, "vision.");
    GRPO_TRY_STATUS(v.read_int("params", m.vision.params, 1, kMaxInt, true));
    GRPO_TRY_STATUS(v.read_int("hidden_size", m.vision.hidden_size, 0, kBig));
    GRPO_TRY_STATUS(v.read_int("num_layers", m.vision.num_layers, 0, 1 << 16));
    GRPO_TRY_STATUS(v.read_int("num_heads", m.vision.num_heads, 0, 1 << 16));
    GRPO_TRY_STATUS(v.read_int("patch_size", m.vision.patch_size, 0, 1 << 16));
    GRPO_TRY_STATUS(v.finish());
  }
  GRPO_TRY_STATUS(r.finish());
  GRPO_TRY_STATUS(check_model_size(m, r.where("name").file));
  return m;
}

}  // namespace

bool is_catalog_name(std::string_view name) {
  if (name.empty() || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string_view to_string(CatalogKind kind) {
  return kind == CatalogKind::kCluster ? "cluster profile" : "model";
}

void MemorySourceProvider::add(CatalogKind kind, std::string name, std::string text) {
  (kind == CatalogKind::kCluster ? clusters_ : models_)[std::move(name)] = std::move(text);
}

Result<SourceFile> MemorySourceProvider::find(CatalogKind kind, std::string_view name) const {
  const auto& m = kind == CatalogKind::kCluster ? clusters_ : models_;
  const auto it = m.find(std::string(name));
  if (it == m.end()) {
    return make_error(ErrorKind::kNotFound, "unknown " + std::string(to_string(kind)) + " '" +
                                                std::string(name) + "'" +
                                                did_you_mean(name, names(kind)));
  }
  return SourceFile{it->first + ".toml", it->second};
}

std::vector<std::string> MemorySourceProvider::names(CatalogKind kind) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : kind == CatalogKind::kCluster ? clusters_ : models_) out.push_back(k);
  return out;
}

Result<Override> parse_override(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return make_error(ErrorKind::kInvalidValue,
                      "--set " + std::string(text) + ": expected key=value");
  }
  Override o{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  if (o.key.empty()) {
    return make_error(ErrorKind::kInvalidValue, "--set " + std::string(text) + ": empty key");
  }
  return o;
}

Result<ClusterProfile> parse_cluster_profile(std::string_view text, std::string_view file_name) {
  GRPO_TRY(TomlValue doc, parse_toml(text, file_name));
  return cluster_from_toml(doc, std::string(file_name));
}

Result<ModelSpec> parse_model_spec(std::string_view text, std::string_view file_name) {
  GRPO_TRY(TomlValue doc, parse_toml(text, file_name));
  return model_from_toml(doc);
}

Result<ClusterProfile> load_cluster(const SourceProvider& provider, std::string_view name,
                                    const std::vector<Override>& overrides) {
  std::vector<std::string> chain;
  std::string path;
  GRPO_TRY(TomlValue doc, load_merged(provider, CatalogKind::kCluster, name, chain, path));
  for (const auto& o : overrides) GRPO_TRY_STATUS(set_dotted(doc, o));
  return cluster_from_toml(doc, path);
}

Result<ModelSpec> load_model(const SourceProvider& provider, std::string_view name) {
  GRPO_TRY(SourceFile file, provider.find(CatalogKind::kModel, name));
  if (file.hf_config) {
    std::string dir_name = file.path;
    if (const auto slash = dir_name.rfind('/'); slash != std::string::npos) {
      dir_name.resize(slash);
      if (const auto up = dir_name.rfind('/'); up != std::string::npos) dir_name.erase(0, up + 1);
    }
    return model_from_hf_config(file.text, file.path, dir_name);
  }
  std::vector<std::string> chain;
  std::string path;
  GRPO_TRY(TomlValue doc, load_merged(provider, CatalogKind::kModel, name, chain, path));
  return model_from_toml(doc);
}

}  // namespace grpo::core
