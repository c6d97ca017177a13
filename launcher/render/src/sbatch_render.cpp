#include "grpo/render/sbatch_render.h"

#include <algorithm>
#include <kainjow/mustache.hpp>
#include <regex>

namespace grpo::render {

namespace {

using Data = kainjow::mustache::data;

// An optional value: a string when present, `false` when empty (kainjow treats "" as true).
Data optional(const std::string& value) {
  return value.empty() ? Data(false) : Data(value);
}

Data to_data(const core::SbatchView& v) {
  Data d;
  d.set("version", v.version);
  d.set("profile_name", v.profile_name);
  d.set("model_name", v.model_name);
  d.set("job_name", v.job_name);
  d.set("nodes", v.nodes);
  d.set("ntasks_per_node", v.ntasks_per_node);
  d.set("gpus_per_node", optional(v.gpus_per_node));
  d.set("gres", optional(v.gres));
  d.set("cpus_per_task", optional(v.cpus_per_task));
  d.set("mem", optional(v.mem));
  d.set("time", optional(v.time));
  d.set("partition", optional(v.partition));
  d.set("account", optional(v.account));
  d.set("qos", optional(v.qos));
  d.set("constraint", optional(v.constraint));
  d.set("signal", optional(v.signal));
  d.set("output", v.output);
  d.set("error", v.error);
  Data extra{Data::type::list};
  for (const auto& a : v.extra_args) extra.push_back(Data(a));
  d.set("extra_args", extra);
  Data env{Data::type::list};
  for (const auto& e : v.env) {
    Data item;
    item.set("name", e.name);
    item.set("value", e.value);
    env.push_back(item);
  }
  d.set("env", env);
  d.set("launcher", v.launcher);
  d.set("run_dir", v.run_dir);
  return d;
}

// Mustache's "standalone" rule: a line holding only a section or comment tag ({{#x}}, {{^x}},
// {{/x}}, {{!...}}) leaves no line of its own in the output. kainjow 4.1 applies it to sections
// that render, but leaves an empty line for a section that is false or an empty list. So each
// such line gets a marker after its tag (which also stops kainjow's own handling), and the lines
// that hold nothing but markers are dropped from the output.
constexpr std::string_view kMarker = "\x01grpo-standalone\x01";

std::string mark_standalone_tags(const std::string& text) {
  static const std::regex standalone(R"(^[ \t]*(\{\{[#^/!][^}]*\}\})[ \t]*$)");
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    const std::string line = text.substr(start, end - start);
    std::smatch m;
    if (std::regex_match(line, m, standalone)) {
      out += m[1].str();
      out += kMarker;
    } else {
      out += line;
    }
    if (has_newline) out.push_back('\n');
    start = end + 1;
  }
  return out;
}

std::string drop_marker_lines(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    const bool has_newline = end != std::string::npos;
    if (!has_newline) end = text.size();
    std::string_view line(text.data() + start, end - start);
    bool only_markers = !line.empty();
    while (only_markers && !line.empty()) {
      if (line.substr(0, kMarker.size()) != kMarker)
        only_markers = false;
      else
        line.remove_prefix(kMarker.size());
    }
    if (!only_markers) {
      out.append(text, start, end - start);
      if (has_newline) out.push_back('\n');
    }
    start = end + 1;
  }
  return out;
}

bool view_has_marker(const core::SbatchView& v) {
  const auto has = [](const std::string& s) { return s.find(kMarker) != std::string::npos; };
  for (const auto* s : {&v.version,       &v.profile_name, &v.model_name,
                        &v.job_name,      &v.nodes,        &v.ntasks_per_node,
                        &v.gpus_per_node, &v.gres,         &v.cpus_per_task,
                        &v.mem,           &v.time,         &v.partition,
                        &v.account,       &v.qos,          &v.constraint,
                        &v.signal,        &v.output,       &v.error,
                        &v.launcher,      &v.run_dir}) {
    if (has(*s)) return true;
  }
  for (const auto& a : v.extra_args) {
    if (has(a)) return true;
  }
  for (const auto& e : v.env) {
    if (has(e.name) || has(e.value)) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& sbatch_variables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {
        "version",       "profile_name", "model_name",    "job_name", "nodes",    "ntasks_per_node",
        "gpus_per_node", "gres",         "cpus_per_task", "mem",      "time",     "partition",
        "account",       "qos",          "constraint",    "signal",   "output",   "error",
        "extra_args",    "env",          "name",          "value",    "launcher", "run_dir"};
    std::sort(n.begin(), n.end());
    return n;
  }();
  return names;
}

core::Result<std::string> render_sbatch(std::string_view template_text,
                                        const core::SbatchView& view,
                                        std::string_view template_name) {
  const std::string text(template_text);
  const core::SourceLocation where{std::string(template_name), 0, 0};
  // Every tag must name a variable of the view: mustache renders an unknown name as nothing.
  static const std::regex tag(R"(\{\{(\{?)\s*([#^/&!>=]?)\s*([^}]*?)\s*\}?\}\})");
  const auto& known = sbatch_variables();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::string sigil = (*it)[2];
    const std::string name = (*it)[3];
    if (sigil == "!") continue;
    if (sigil == ">" || sigil == "=") {
      return core::make_error(
          core::ErrorKind::kParse,
          "partials and delimiter changes are not supported: {{" + sigil + name + "}}", where);
    }
    if (name == "." || std::binary_search(known.begin(), known.end(), name)) continue;
    return core::make_error(core::ErrorKind::kInvalidValue,
                            "unknown template variable {{" + name + "}}", where);
  }
  if (view_has_marker(view)) {
    return core::make_error(core::ErrorKind::kInvalidValue,
                            "a value contains the renderer's internal marker (\\x01)", where);
  }
  kainjow::mustache::mustache tmpl{mark_standalone_tags(text)};
  if (!tmpl.is_valid()) {
    return core::make_error(core::ErrorKind::kParse, tmpl.error_message(), where);
  }
  // The values are final script text (quoted by the core); never HTML-escape them.
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  const std::string out = tmpl.render(to_data(view));
  if (!tmpl.is_valid()) {
    return core::make_error(core::ErrorKind::kParse, tmpl.error_message(), where);
  }
  return drop_marker_lines(out);
}

}  // namespace grpo::render
