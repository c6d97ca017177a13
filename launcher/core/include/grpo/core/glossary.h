// The one glossary of rank and parallelism terms, used everywhere without synonyms.
//
//   world_size   number of processes (ranks) in one attempt; one rank per device.
//   global_rank  0 .. world_size-1, unique across the job.
//   node_rank    index of the node in the allocation, 0 .. nodes-1.
//   local_rank   index of a rank within its node, 0 .. ranks_per_node-1; selects the device.
//   ranks_per_node  ranks on each node (equal on every node).
//
// Parallel coordinates (Megatron-Core's terms, see docs/parallelism.md):
//   tp   tensor-parallel size: layers split across tp devices; a TP group never crosses a node.
//   pp   pipeline-parallel size: layers split into pp stages.
//   cp   context-parallel size: the sequence split across cp devices.
//   dp   data-parallel size = world_size / (tp * pp * cp).
//   ep   expert-parallel size: the experts of an MoE layer split across ep devices.
//   etp  expert-tensor-parallel size: each expert split across etp devices.
//   edp  expert-data-parallel size = world_size / (etp * ep * pp).
//
// Rank order (Megatron-Core's default "tp-cp-ep-dp-pp"): tp varies fastest, then cp, then dp, then
// pp; the expert view of the same ranks orders etp, ep, edp, pp.
#pragma once

#include <cstdint>
#include <string>

namespace grpo::core {

struct ParallelDims {
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int dp = 1;
  int ep = 1;
  int etp = 1;

  int model_parallel() const { return tp * pp * cp; }
  int world_size() const { return tp * pp * cp * dp; }
  // Expert-data-parallel size for a world of tp*pp*cp*dp ranks (0 when not a whole number).
  int edp() const {
    const int denom = etp * ep * pp;
    return denom > 0 && world_size() % denom == 0 ? world_size() / denom : 0;
  }
  friend bool operator==(const ParallelDims&, const ParallelDims&) = default;
};

// Where one global rank sits: its node, local rank, device and parallel coordinates.
struct RankCoords {
  int global_rank = 0;
  int node_rank = 0;
  int local_rank = 0;
  int device = 0;
  int tp = 0;
  int cp = 0;
  int dp = 0;
  int pp = 0;
  int ep = 0;
  int etp = 0;
  int edp = 0;
  friend bool operator==(const RankCoords&, const RankCoords&) = default;
};

}  // namespace grpo::core
