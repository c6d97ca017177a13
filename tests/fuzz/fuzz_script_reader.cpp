// Fuzzes the verl script reader and the checker behind it with an in-memory schema and model:
// any input must give a report or a one-line error; never a crash or a hang. Seeds: the check
// corpus and seeds/shell (splitting, arrays, if / case, functions, source, here-documents).
#include <cstddef>
#include <cstdint>
#include <string>

#include "grpo/verl/checker.h"

namespace {

const grpo::core::ConfigSchema& schema() {
  static const grpo::core::ConfigSchema s =
      grpo::core::ConfigSchema::parse(
          {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size\n"
           "actor_rollout_ref.actor.megatron.override_transformer_config.*\n"
           "actor_rollout_ref.model.path\ndata.train_batch_size\ntrainer.nnodes\n",
           "fp16\tbool\nbf16\tbool\n", "NCCL_DEBUG\n", "HCCL_BUFFSIZE\n"})
          .value();
  return s;
}

const grpo::core::MemorySourceProvider& provider() {
  static const grpo::core::MemorySourceProvider p = [] {
    grpo::core::MemorySourceProvider m;
    m.add(grpo::core::CatalogKind::kCluster, "a100x8",
          "name = \"a100x8\"\nnodes = 1\ngpus_per_node = 8\n[device]\nkind = \"A\"\nvendor = "
          "\"nvidia\"\n"
          "memory_gib = 80\npeak_bf16_tflops = 312\npeak_fp16_tflops = 312\nmemory_bandwidth_gbps "
          "= 2000\n"
          "bf16 = true\n[network]\nintra_node = \"nvlink\"\nintra_node_gbps = 300\ninter_node = "
          "\"infiniband\"\n"
          "inter_node_gbps = 200\n");
    m.add(grpo::core::CatalogKind::kModel, "tiny",
          "name = \"tiny\"\nhf_id = \"Qwen/Tiny\"\nhidden_size = 64\nnum_layers = "
          "4\nnum_attention_heads = 4\n"
          "num_kv_heads = 2\nffn_hidden_size = 128\nvocab_size = 100\n");
    return m;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // `source FILE` reads the input itself again (cycles, the depth and file limits bound it).
  grpo::core::ShellReadOptions read_options;
  read_options.read_file = [&text](const std::string& path) -> grpo::core::Result<std::string> {
    if (path.find("missing") != std::string::npos)
      return grpo::core::make_error(grpo::core::ErrorKind::kNotFound, "no such file: " + path);
    return text;
  };
  auto script = grpo::core::read_shell_script(text, "dir/fuzz.sh", read_options);
  if (!script.ok()) {
    if (script.error().str().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  grpo::core::CheckOptions options;
  auto report = grpo::core::check_script(script.value(), schema(), provider(), options);
  if (!report.ok() && report.error().str().find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
