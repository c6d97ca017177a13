// `grpo-launch export RUN_DIR [--step N] -o DIR`: a run's checkpoint as a Hugging Face model
// directory (docs/hf-checkpoints.md "Export"); the export itself is app::export_checkpoint.
#include <iostream>

#include "commands.h"
#include "exit_codes.h"
#include "grpo/app/export_run.h"

namespace grpo::cli {

int cmd_export(const GlobalArgs& global, const ExportArgs& args) {
  app::ExportRequest request;
  request.run_dir = args.run_dir;
  request.step = args.step;
  request.output = args.output;
  request.dtype = args.dtype;
  request.max_shard_size = args.max_shard_size;
  request.profile_dirs = global.profile_dirs;
  auto done = app::export_checkpoint(request, print_warning);
  if (!done.ok()) return fail(done.error());
  std::cout << done->summary;
  return kExitOk;
}

}  // namespace grpo::cli
