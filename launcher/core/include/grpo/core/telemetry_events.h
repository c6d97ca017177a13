// The trainer's telemetry contract (docs/telemetry.md): the event types grpo-trainer writes on
// stdout and the supervisor, `report`, `status` and the TensorBoard log read, and the codes of
// its `error` event. Both sides name them through these constants, so a renamed event is renamed
// for writer and readers at once; TelemetryContract.TypesAreSpelledOnlyHere
// (tests/unit/telemetry_events_test.cpp) refuses a type written as a literal where an event is
// emitted or its type compared, anywhere else in launcher/ or trainer/.
#pragma once

namespace grpo::core::telemetry {

// The envelope's "schema" (every event also has "type", "time", "rank", "world_size", "pid").
inline constexpr int kSchemaVersion = 1;

namespace event {
// Progress (lower case).
inline constexpr const char* kStart = "start";
inline constexpr const char* kLayout = "layout";
inline constexpr const char* kHeartbeat = "heartbeat";
inline constexpr const char* kStep = "step";
inline constexpr const char* kValidation = "validation";
inline constexpr const char* kExpertLoad = "expert_load";
inline constexpr const char* kCheckpointSaved = "checkpoint_saved";
inline constexpr const char* kCheckpointLoaded = "checkpoint_loaded";
inline constexpr const char* kCheckpointSkipped = "checkpoint_skipped";
inline constexpr const char* kSaveInterval = "save_interval";
inline constexpr const char* kFaultInjected = "fault_injected";
inline constexpr const char* kStack = "stack";
inline constexpr const char* kStopped = "stopped";
inline constexpr const char* kDone = "done";
inline constexpr const char* kError = "error";  // with a `code` (below)
// A verl run's resume point, synthesized by the supervisor's verl engine (docs/verl.md).
inline constexpr const char* kResume = "resume";
// Failures and findings (UPPER_SNAKE).
inline constexpr const char* kCommError = "COMM_ERROR";
inline constexpr const char* kOomError = "OOM_ERROR";
inline constexpr const char* kIoError = "IO_ERROR";
inline constexpr const char* kInternalError = "ERROR";
inline constexpr const char* kExpertImbalance = "EXPERT_IMBALANCE";
}  // namespace event

// The `code` of an `error` event.
namespace error_code {
inline constexpr const char* kConfig = "CONFIG_ERROR";
inline constexpr const char* kBootstrap = "BOOTSTRAP_ERROR";
inline constexpr const char* kCheckpoint = "CHECKPOINT_ERROR";
inline constexpr const char* kIo = "IO_ERROR";
inline constexpr const char* kComm = "COMM_ERROR";
}  // namespace error_code

}  // namespace grpo::core::telemetry
