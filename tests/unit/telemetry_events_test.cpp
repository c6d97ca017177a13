// The trainer's event types are spelled once, in grpo/core/telemetry_events.h (issue 33: "each
// contract defined once"): grpo-trainer emits and the supervisor, `report` and the TensorBoard
// log compare types through its constants, so a renamed event is renamed on both sides. This test
// keeps it so: a contract type written as a literal where an event is emitted (`emit("x"`,
// `{"type", "x"}`), where a type or an error code is compared (`type == "x"`, `code == "x"`) or
// where an error code is set (`{"code", "X"}`), anywhere else in launcher/ or trainer/, fails
// with its file:line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "grpo/core/telemetry_events.h"
#include "test_support.h"

namespace grpo::core {
namespace {

std::vector<std::string> event_types() {
  using namespace telemetry::event;
  return {kStart,
          kLayout,
          kHeartbeat,
          kStep,
          kValidation,
          kExpertLoad,
          kCheckpointSaved,
          kCheckpointLoaded,
          kCheckpointSkipped,
          kSaveInterval,
          kFaultInjected,
          kStack,
          kStopped,
          kDone,
          kError,
          kResume,
          kCommError,
          kOomError,
          kIoError,
          kInternalError,
          kExpertImbalance};
}

std::vector<std::string> error_codes() {
  using namespace telemetry::error_code;
  return {kConfig, kBootstrap, kCheckpoint, kIo, kComm};
}

// Does `line` (its code, not a comment) use `name` as a literal type or code?
bool spells(const std::string& line, const std::string& name, bool code) {
  const std::string c = line.substr(0, line.find("//"));
  const std::string q = "\"" + name + "\"";
  const std::vector<std::string> forms =
      code ? std::vector<std::string>{"{\"code\", " + q, "code == " + q, "code != " + q}
           : std::vector<std::string>{
                 "emit(" + q,    "{\"type\", " + q + "}",  "type == " + q,
                 "type != " + q, "value_or(\"\") != " + q, "value_or(\"\") == " + q};
  for (const auto& f : forms) {
    if (c.find(f) != std::string::npos) return true;
  }
  return false;
}

TEST(TelemetryContract, TypesAreSpelledOnlyHere) {
  std::size_t files = 0;
  const auto found = test::product_lines_spelling(
      "telemetry_events.h",
      [](const std::string& line) {
        std::vector<std::string> out;
        for (const auto& [names, code] : {std::pair{event_types(), false}, {error_codes(), true}}) {
          for (const auto& n : names) {
            if (spells(line, n, code)) out.push_back(n);
          }
        }
        return out;
      },
      files);
  EXPECT_GT(files, 100u);
  for (const auto& f : found)
    ADD_FAILURE() << f << " (name it through grpo/core/telemetry_events.h)";
}

// The detector, on lines written by hand; and the names docs/telemetry.md documents.
TEST(TelemetryContract, TheCheckSeesLiteralTypes) {
  EXPECT_TRUE(spells(R"(  tel.emit("step", fields);)", "step", false));
  EXPECT_TRUE(spells(R"(  if (type == "heartbeat") {)", "heartbeat", false));
  EXPECT_TRUE(spells(R"(  json e = {{"type", "step"}, {"phase", "grpo"}};)", "step", false));
  EXPECT_TRUE(spells(R"(  tel.emit(k, {{"code", "CONFIG_ERROR"}});)", "CONFIG_ERROR", true));
  EXPECT_FALSE(spells(R"(  tel.emit(telemetry::event::kStep, {{"step", 3}});)", "step", false));
  EXPECT_FALSE(spells(R"(  j["step"] = 3;  // a field, not a type)", "step", false));
  std::ifstream doc(test::source_dir() / "docs" / "telemetry.md");
  const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
  for (const auto& n : event_types()) {
    if (n == telemetry::event::kResume) continue;  // the verl engine's, docs/verl.md
    EXPECT_NE(text.find("`" + n + "`"), std::string::npos) << n << " is not in docs/telemetry.md";
  }
}

}  // namespace
}  // namespace grpo::core
