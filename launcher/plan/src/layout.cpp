#include "grpo/plan/layout.h"

#include "grpo/core/text.h"
#include "stage_split.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <tuple>
#include <utility>

namespace grpo::core {
namespace {

Result<int> parse_int(std::string_view key, std::string_view value) {
  int out = 0;
  const auto* end = value.data() + value.size();
  const auto [p, ec] = std::from_chars(value.data(), end, out);
  if (ec != std::errc{} || p != end || out < 0) {
    return make_error(ErrorKind::kInvalidValue, "--set " + std::string(key) + "=" +
                                                    std::string(value) +
                                                    ": expected a non-negative integer");
  }
  return out;
}

Result<bool> parse_bool(std::string_view key, std::string_view value) {
  if (const auto b = parse_bool_word(value)) return *b;
  return make_error(ErrorKind::kInvalidValue, "--set " + std::string(key) + "=" +
                                                  std::string(value) + ": expected true or false");
}

}  // namespace

std::string_view to_string(Recompute r) {
  return r == Recompute::kFull ? "full" : "none";
}

std::string_view to_string(Backend b) {
  switch (b) {
    case Backend::kFsdp:
      return "fsdp";
    case Backend::kEmbedded:
      return "embedded";
    case Backend::kMegatron:
      break;
  }
  return "megatron";
}

std::optional<Backend> parse_backend(std::string_view word) {
  for (const Backend b : {Backend::kMegatron, Backend::kFsdp, Backend::kEmbedded}) {
    if (word == to_string(b)) return b;
  }
  return std::nullopt;
}

std::string to_string(const Offload& o) {
  std::string s;
  if (o.params) s += "params";
  if (o.grads) s += std::string(s.empty() ? "" : "+") + "grads";
  if (o.optimizer) s += std::string(s.empty() ? "" : "+") + "optimizer";
  if (o.cpu_optimizer) s += std::string(s.empty() ? "" : "+") + "cpu-optimizer";
  return s.empty() ? "none" : s;
}

std::optional<std::pair<int, int>> uneven_split(int num_layers, int pp) {
  if (pp <= 1 || num_layers % pp == 0) return std::pair{0, 0};
  // Middle stages get ceil(L / pp) layers; the first and last share the rest, which is smaller
  // because both ends carry extra work (embedding; LM head and loss). An odd layer goes to the
  // last stage. Splits whose first or last stage would be empty are refused (the 1.5 x L / pp
  // bound below is a guard; ceil(L / pp) already is the smallest possible largest stage).
  const int middle = (num_layers + pp - 1) / pp;
  const int rest = pp == 2 ? num_layers : num_layers - (pp - 2) * middle;
  const int first = rest / 2;
  const int last = rest - first;
  if (first < 1 || last < 1) return std::nullopt;
  const int largest = std::max({first, last, pp > 2 ? middle : 0});
  if (2 * largest * pp > 3 * num_layers) return std::nullopt;
  return std::pair{first, last};
}

StageSplit split_stages(int layers, int pp, int first_given, int last_given, bool count_embedding,
                        bool count_loss) {
  StageSplit s;
  if (pp <= 1) {
    s.first = s.last = s.middle = layers;
    return s;
  }
  if (first_given == 0 && last_given == 0 && (count_embedding || count_loss)) {
    // account_for_{embedding,loss}_in_pipeline_split: the embedding and the loss each count as
    // one layer of the first / last stage; the total must then divide evenly.
    const int total = layers + (count_embedding ? 1 : 0) + (count_loss ? 1 : 0);
    s.ok = total % pp == 0;
    const int per = total / pp;
    s.middle = per;
    s.first = per - (count_embedding ? 1 : 0);
    s.last = per - (count_loss ? 1 : 0);
    s.ok = s.ok && s.first >= 1 && s.last >= 1;
    return s;
  }
  if (first_given > 0 && last_given > 0) {
    const int rest = layers - first_given - last_given;
    s.first = first_given;
    s.last = last_given;
    if (pp == 2) {
      s.ok = rest == 0;
    } else {
      s.ok = rest > 0 && rest % (pp - 2) == 0;
      s.middle = s.ok ? rest / (pp - 2) : 0;
    }
    return s;
  }
  if (first_given > 0 || last_given > 0) {
    const int given = first_given > 0 ? first_given : last_given;
    const int rest = layers - given;
    s.ok = rest > 0 && rest % (pp - 1) == 0;
    const int other = s.ok ? rest / (pp - 1) : 0;
    s.first = first_given > 0 ? given : other;
    s.last = last_given > 0 ? given : other;
    s.middle = other;
    return s;
  }
  s.ok = layers % pp == 0;
  s.first = s.middle = s.last = layers / pp;
  return s;
}

PipelineLayout parse_pipeline_layout(std::string_view text) {
  PipelineLayout out;
  constexpr std::size_t kMaxLength = 1 << 16;  // far beyond any real layout; guards "(t)*1e9"
  auto digits_at = [](const std::string& s, std::size_t i) {
    std::size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    return j;
  };
  // Append `piece` n times, unless that makes the string absurdly long.
  auto repeat = [&](std::string& dst, const std::string& piece, const std::string& count) {
    if (count.size() > 6 || piece.size() * std::stoul(count) + dst.size() > kMaxLength) {
      out.error = "the layout unrolls to more than " + std::to_string(kMaxLength) + " characters";
      return false;
    }
    for (unsigned long k = std::stoul(count); k > 0; --k) dst += piece;
    return true;
  };
  std::string s;
  for (char ch : text) {
    if (ch != ',') s += ch;  // purely cosmetic commas
  }
  // re.sub(r'\(([^)]+)\)\*(\d+)', ...): a group up to the first ')' followed by "*n".
  std::string unrolled;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '(') {
      const std::size_t close = s.find(')', i + 1);
      if (close != std::string::npos && close > i + 1 && close + 1 < s.size() &&
          s[close + 1] == '*') {
        const std::size_t end = digits_at(s, close + 2);
        if (end > close + 2) {
          if (!repeat(unrolled, s.substr(i + 1, close - i - 1),
                      s.substr(close + 2, end - close - 2)))
            return out;
          i = end;
          continue;
        }
      }
    }
    unrolled += s[i++];
  }
  // re.sub(r'(.)\*(\d+)', ...): one character followed by "*n".
  s.clear();
  for (std::size_t i = 0; i < unrolled.size();) {
    if (i + 2 < unrolled.size() && unrolled[i + 1] == '*') {
      const std::size_t end = digits_at(unrolled, i + 2);
      if (end > i + 2) {
        if (!repeat(s, std::string(1, unrolled[i]), unrolled.substr(i + 2, end - i - 2)))
          return out;
        i = end;
        continue;
      }
    }
    s += unrolled[i++];
  }
  std::string stage;
  for (char ch : s) {
    if (ch == '|') {
      out.stages.push_back(stage);
      stage.clear();
    } else if (ch == 'E' || ch == 'L' || ch == 't' || ch == 'm') {
      stage += ch;
    } else if (out.error.empty()) {
      out.error = std::string("invalid layer character '") + ch + "' (known: E, L, t, m)";
    }
  }
  out.stages.push_back(stage);
  return out;
}

int PipelineLayout::count(char layer) const {
  int n = 0;
  for (const auto& st : stages) n += static_cast<int>(std::count(st.begin(), st.end(), layer));
  return n;
}

std::vector<int> stage_layers(const ModelSpec& model, const Layout& layout) {
  const int pp = layout.dims.pp;
  const int layers = static_cast<int>(model.num_layers);
  if (!layout.pipeline_layout.empty() && pp >= 1) {
    // Megatron's PipelineParallelLayerLayout: stage i belongs to PP rank i % pp.
    const PipelineLayout pl = parse_pipeline_layout(layout.pipeline_layout);
    if (pl.error.empty() && pl.stages.size() % static_cast<std::size_t>(pp) == 0) {
      std::vector<int> out(static_cast<std::size_t>(pp), 0);
      for (std::size_t i = 0; i < pl.stages.size(); ++i) {
        out[i % static_cast<std::size_t>(pp)] +=
            static_cast<int>(std::count(pl.stages[i].begin(), pl.stages[i].end(), 't'));
      }
      return out;
    }
  }
  if (pp <= 1) return {layers};
  const StageSplit s = split_stages(layers, pp, layout.first_stage_layers, layout.last_stage_layers,
                                    layout.split_counts_embedding, layout.split_counts_loss);
  std::vector<int> out(static_cast<std::size_t>(pp), s.middle);
  out.front() = s.first;
  out.back() = s.last;
  return out;
}

bool LayoutConstraints::any() const {
  return tp || pp || cp || dp || ep || etp || micro_batch || rollout_tp || ref_tp ||
         first_stage_layers || last_stage_layers || param_offload || grad_offload ||
         optimizer_offload || cpu_optimizer || sequence_parallel || distributed_optimizer ||
         recompute || backend;
}

const std::vector<std::string>& layout_keys() {
  static const std::vector<std::string> keys = {"tp",
                                                "pp",
                                                "cp",
                                                "dp",
                                                "ep",
                                                "etp",
                                                "micro_batch",
                                                "rollout_tp",
                                                "ref_tp",
                                                "first_stage_layers",
                                                "last_stage_layers",
                                                "param_offload",
                                                "grad_offload",
                                                "optimizer_offload",
                                                "cpu_optimizer",
                                                "sequence_parallel",
                                                "distributed_optimizer",
                                                "recompute",
                                                "backend"};
  return keys;
}

bool is_layout_key(std::string_view key) {
  const auto& k = layout_keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

Status apply_layout_setting(LayoutConstraints& c, std::string_view key, std::string_view value) {
  auto set_int = [&](std::optional<int>& field, bool allow_zero) -> Status {
    GRPO_TRY(int v, parse_int(key, value));
    if (v == 0 && !allow_zero) {
      return make_error(ErrorKind::kInvalidValue,
                        "--set " + std::string(key) + "=0: must be positive");
    }
    field = v;
    return ok_status();
  };
  auto set_bool = [&](std::optional<bool>& field) -> Status {
    GRPO_TRY(bool v, parse_bool(key, value));
    field = v;
    return ok_status();
  };
  if (key == "tp") return set_int(c.tp, false);
  if (key == "pp") return set_int(c.pp, false);
  if (key == "cp") return set_int(c.cp, false);
  if (key == "dp") return set_int(c.dp, false);
  if (key == "ep") return set_int(c.ep, false);
  if (key == "etp") return set_int(c.etp, false);
  if (key == "micro_batch") return set_int(c.micro_batch, false);
  if (key == "rollout_tp") return set_int(c.rollout_tp, false);
  if (key == "ref_tp") return set_int(c.ref_tp, false);
  if (key == "first_stage_layers") return set_int(c.first_stage_layers, false);
  if (key == "last_stage_layers") return set_int(c.last_stage_layers, false);
  if (key == "param_offload") return set_bool(c.param_offload);
  if (key == "grad_offload") return set_bool(c.grad_offload);
  if (key == "optimizer_offload") return set_bool(c.optimizer_offload);
  if (key == "cpu_optimizer") return set_bool(c.cpu_optimizer);
  if (key == "sequence_parallel") return set_bool(c.sequence_parallel);
  if (key == "distributed_optimizer") return set_bool(c.distributed_optimizer);
  if (key == "backend") {
    if (const auto b = parse_backend(value)) {
      c.backend = b;
      return ok_status();
    }
    return make_error(ErrorKind::kInvalidValue, "--set backend=" + std::string(value) +
                                                    ": expected megatron, fsdp or embedded");
  }
  if (key == "recompute") {
    if (value == "none" || value == "full") {
      c.recompute = value == "full" ? Recompute::kFull : Recompute::kNone;
      return ok_status();
    }
    return make_error(ErrorKind::kInvalidValue,
                      "--set recompute=" + std::string(value) + ": expected none or full");
  }
  return make_error(ErrorKind::kUnknownKey, "--set " + std::string(key) + ": not a layout key");
}

}  // namespace grpo::core
