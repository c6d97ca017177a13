// How Megatron-Core splits the decoder layers over pipeline stages (internal to grpo_plan:
// layout.cpp defines it, legality.cpp checks layouts with it).
#pragma once

namespace grpo::core {

// Megatron-Core (transformer_block.py): with only the first (or last) stage's count given, the
// remaining layers spread evenly over all other stages; with both, over the middle stages.
struct StageSplit {
  bool ok = true;
  int first = 0;
  int middle = 0;
  int last = 0;
};

// The split of `layers` over `pp` stages with the first/last stage counts given (0: not given);
// with neither given, account_for_{embedding,loss}_in_pipeline_split count the embedding and the
// loss as one layer of the first / last stage.
StageSplit split_stages(int layers, int pp, int first_given, int last_given,
                        bool count_embedding = false, bool count_loss = false);

}  // namespace grpo::core
