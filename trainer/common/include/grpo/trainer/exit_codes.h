// grpo-trainer's exit codes (docs/telemetry.md#exit-codes). The supervisor maps them to failure
// classes; keep them stable.
#pragma once

namespace grpo::trainer {

inline constexpr int kExitOk = 0;             // training finished (final checkpoint written)
inline constexpr int kExitInternal = 1;       // a bug or an unexpected error
inline constexpr int kExitUsage = 2;          // bad command line, config or model spec
inline constexpr int kExitIo = 3;             // run directory or checkpoint I/O failed
inline constexpr int kExitComm = 4;           // rendezvous or a collective failed (peer lost)
inline constexpr int kExitOom = 5;            // an allocation failed (OOM_ERROR was emitted)
inline constexpr int kExitInjectedCrash = 6;  // fault injection: crash / torn_ckpt
inline constexpr int kExitStopped = 7;        // stopped on request (SIGTERM/SIGINT or
                                              // control/stop) after writing a checkpoint

}  // namespace grpo::trainer
