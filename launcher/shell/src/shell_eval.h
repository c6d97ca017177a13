// Internal to the shell reader: the evaluator that follows a parsed script (shell_syntax.h)
// without running anything. Its members are defined along the phases: shell_expand.cpp
// (expansion and word splitting), shell_conditions.cpp (arithmetic, patterns, tests),
// shell_script.cpp (control flow: commands, if / case / loops, functions) and
// shell_builtins.cpp (assignments, declarations, set, source).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grpo/shell/shell_script.h"
#include "shell_syntax.h"

namespace grpo::core::shell {

constexpr std::size_t kMaxScriptBytes = 4u << 20;
constexpr int kMaxExpansionDepth = 32;  // ${A:-${B:-...}} and $( ) inside each other
constexpr int kMaxCallDepth = 16;       // function calls inside function calls
constexpr std::size_t kMaxSourcedFiles = 64;
constexpr int kMaxEvalNesting = 200;  // compound commands inside calls inside sources
// Work bound over a whole read: characters expanded or copied between branch states, commands
// followed. A script past it is refused (exit 2) instead of taking unbounded time or memory.
constexpr std::size_t kWorkBudget = 8u << 20;

// Per character of expanded text: where it was written and how it may be treated.
enum CharFlag : std::uint8_t {
  kQuotedChar = 1,  // quoted: literal in patterns
  kSplitChar = 2,   // from an unquoted expansion: white space here separates words
  kFieldChar = 4,   // from an unquoted or multi-word expansion: a word starting here is located
                    // at this character
};

struct CharInfo {
  Loc loc;
  std::uint32_t reason = 0;  // index into the reason table; 0: resolved
  std::uint8_t flags = 0;
};

struct Text {
  std::string s;
  std::vector<CharInfo> info;

  void push(char c, const CharInfo& i) {
    s += c;
    info.push_back(i);
  }
  void append(const Text& t) {
    s += t.s;
    info.insert(info.end(), t.info.begin(), t.info.end());
  }
  Text substr(std::size_t pos, std::size_t n = std::string::npos) const;
  std::uint32_t first_reason() const;
  bool unresolved() const { return first_reason() != 0; }
  // Text produced by the reader (a number, a default of the environment), located at `at`.
  static Text made(std::string_view s, Loc at, std::uint32_t reason = 0);
};

struct Variable {
  std::vector<Text> values;  // a scalar has one
  bool array = false;
  bool exported = false;
  Loc assigned;  // where the last assignment word starts
};

enum class Flow { kNormal, kReturn, kExit, kBreak };
enum class Tri { kFalse, kTrue, kUnknown };

inline Tri tri(bool b) {
  return b ? Tri::kTrue : Tri::kFalse;
}
inline Tri tri_not(Tri a) {
  return a == Tri::kUnknown ? a : tri(a == Tri::kFalse);
}
inline Tri tri_and(Tri a, Tri b) {
  if (a == Tri::kFalse || b == Tri::kFalse) return Tri::kFalse;
  return a == Tri::kTrue && b == Tri::kTrue ? Tri::kTrue : Tri::kUnknown;
}
inline Tri tri_or(Tri a, Tri b) {
  if (a == Tri::kTrue || b == Tri::kTrue) return Tri::kTrue;
  return a == Tri::kFalse && b == Tri::kFalse ? Tri::kFalse : Tri::kUnknown;
}

// One word after expansion.
struct Field {
  Text text;
  bool from_args = false;  // "$@" of the script: any number of unknown words
};

struct State {
  std::map<std::string, Variable> vars;
  std::map<std::string, std::shared_ptr<const Command>> functions;
  // $1, $2, ...: at the top of the script one from_args field (its unknown arguments).
  std::vector<Field> positional = {Field{{}, true}};
  std::vector<std::map<std::string, std::optional<Variable>>> frames;  // `local`s to restore
  bool nounset = false;
  Flow flow = Flow::kNormal;
};

// `path` with "." and "x/.." removed ("a/./b/../c" is "a/c").
std::string normalize_path(const std::string& path);

struct Reason {
  UnresolvedKind kind;
  std::string why;
};

class Evaluator {
 public:
  Evaluator(const ShellReadOptions& options, std::string script_name);
  Result<ParsedScript> run(std::string_view text);

  // --- expansion (shell_expand.cpp)
  // The words of a command: expanded, split where unquoted, "$@" / "${A[@]}" spread.
  Result<std::vector<Field>> fields(const Word& w, int depth = 0);
  // One word without splitting (assignment values, case subjects, [[ ]] operands). Quoted
  // characters keep kQuotedChar for pattern matching.
  Result<Text> single(const Word& w, int depth = 0);
  // The value of NAME=value / the elements of NAME=( ... ).
  Result<std::vector<Text>> assigned_values(const Word& w);
  std::uint32_t reason(UnresolvedKind kind, const std::string& why);
  bool glob_match(const Text& pattern, const std::string& s) const;
  std::optional<long long> arithmetic(const std::string& expr) const;
  Result<Tri> test(const std::vector<Text>& args, bool double_bracket);
  ShellWord to_shell_word(const Field& f, Loc word_loc) const;
  ShellAssignment assignment(const std::string& name, const std::vector<Text>& values, Loc at,
                             bool exported) const;
  Status charge(std::size_t work, Loc at);

 private:
  struct Builder;
  struct Value;
  Status expand_parts(const std::vector<WordPart>& parts, bool in_dq, bool literal_splits,
                      Builder& b, int depth);
  Status expand_param(const WordPart& p, bool quoted, Builder& b, int depth);
  // The parts of ${...} (shell_expand.cpp): one parameter expansion being expanded (ParamOp),
  // its value added to the word, an unresolved one, ${#NAME}, and the operators that rewrite a
  // set, known value: each gives "" or why it cannot (the expansion is then unresolved).
  struct ParamOp;
  Status emit_value(const Value& val, const ParamOp& o, Builder& b);
  Status add_unresolved(const ParamOp& o, UnresolvedKind kind, const std::string& why, Builder& b);
  Status expand_length(const Value& v, const ParamOp& o, Builder& b);
  Result<std::string> remove_pattern(Value& v, const ParamOp& o);
  Result<std::string> convert_case(Value& v, const ParamOp& o);
  Result<std::string> replace_pattern(Value& v, const ParamOp& o);
  Result<std::string> substring(Value& v, const ParamOp& o);
  Result<Value> lookup(const std::string& name, const std::string& index, Loc at);
  Result<Text> default_word(const std::string& text, Loc at, bool quoted, int depth);
  Result<Text> substitution(const WordPart& p, int depth);
  Result<std::optional<long long>> index_of(const std::string& index);
  Text unresolved_text(const std::string& text, Loc at, UnresolvedKind kind,
                       const std::string& why);

  // --- control flow (shell_script.cpp; builtins that change state in shell_builtins.cpp)
  Status list(const List& l);
  Result<Tri> list_status(const List& l);
  Result<Tri> and_or(const AndOr& a);
  Result<Tri> pipeline(const Pipeline& p);
  Result<Tri> command(const Command& c);
  Result<Tri> command_inner(const Command& c);
  Result<Tri> simple(const Command& c);
  Result<Tri> if_command(const Command& c);
  Result<Tri> case_command(const Command& c);
  Result<Tri> loop_command(const Command& c);
  Result<Tri> call(const std::string& name, std::vector<Field> args, Loc at);
  Result<Tri> source(const std::vector<Field>& args, Loc at);
  Result<Tri> declaration(const Command& c, std::size_t first, const std::string& builtin);
  Result<Tri> set_builtin(const std::vector<Field>& args);
  Status assign(const Word& w, bool exported, bool local, ShellCommand* record);
  void set_var(const std::string& name, std::vector<Text> values, bool array, Loc at);
  void mark_unknown(const std::string& name, Loc at, const std::string& why);
  Result<State> copy_state(Loc at);
  void merge(std::vector<State> outcomes, const std::string& what);
  // After a function body or a sourced file ran: the states its `return`s left, merged with the
  // state at its end (`what` names it in the notes).
  void join_returns(const std::string& what);
  std::string where(Loc at) const;
  void note(const std::string& text);  // ParsedScript::notes, each once, at most 64
  Result<std::shared_ptr<const std::map<std::string, ShellAssignment>>> exported_now(Loc at);

  const ShellReadOptions& options_;
  std::string script_name_;
  std::string script_dir_;
  std::vector<std::string> files_;   // index: Loc::file
  std::vector<std::string> active_;  // the files being read (the script, then its sources)
  std::vector<Reason> reasons_;
  std::map<std::pair<int, std::string>, std::uint32_t> reason_ids_;
  State st_;
  ParsedScript out_;
  std::vector<std::string> conditions_;       // undecided tests around the current command
  std::vector<std::vector<State>> returned_;  // per call: states of undecided `return`s
  std::shared_ptr<const std::map<std::string, ShellAssignment>> exported_cache_;
  std::size_t work_ = 0;
  int call_depth_ = 0;
  int loop_depth_ = 0;  // break / continue outside a loop do nothing
  int nesting_ = 0;     // command() inside command(): compound commands, calls, sources
  int source_depth_ = 0;
};

struct Evaluator::Value {
  bool set = false;
  bool known_empty = false;  // an element past the end of a known array: empty, not unknown
  std::vector<Text> items;
  bool multi = false;  // [@] / [*] / $@ / $*
  bool star = false;   // [*] / $*: one word when quoted
  bool args = false;   // the script's "$@"
  UnresolvedKind unset_kind = UnresolvedKind::kUnsetVariable;
  std::string unset_why;
};

struct Evaluator::ParamOp {
  const WordPart& part;
  std::string raw;      // as written: ${...} or $NAME
  std::string name;     // NAME, a digit or one of @ * # ? $ ! -
  std::string op_word;  // what follows NAME[index]: the operator and its word
  Loc word_loc;         // where the operator's word starts
  bool quoted = false;
  int depth = 0;
  char op = 0;  // the operator's character (after a ':' for :- := :? :+)
};

// Where the character `n` of `body` is, when `body` starts at `start` (shell_expand.cpp).
Loc offset_loc(Loc start, const std::string& body, std::size_t n);

}  // namespace grpo::core::shell
