#!/usr/bin/python3
"""The sizes issue 33 bounds: product files over 800 lines and functions over 120 lines.

  scripts/code-sizes.py [--file-limit N] [--function-limit N]

Reads the tracked C++ sources under launcher/, trainer/ and kernels/ (git ls-files). A function
is a brace block at namespace or class scope opened after a parameter list (`name(...) {`, with
const / override / noexcept / a trailing return type / a constructor's initializer list);
control statements and lambdas inside a function count toward that function. Comments, string
and character literals (raw strings too) are skipped before braces are counted. Prints one line
per file or function over its limit, largest first, and exits 1 when there is any."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}
HEAD = re.compile(r"([~\w:]+)\s*\(([^()]|\([^()]*\))*\)\s*(const)?\s*(override|noexcept|final)?"
                  r"\s*(->\s*[\w:<>,\s*&]+)?\s*(:[^{};]*)?$")


def code_only(text):
    """`text` with comments and literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delim = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            j = text.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            out.append(q + q)
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def functions(path):
    """(lines, first line, name) of every function in `path`."""
    found, stack, line, head = [], [], 1, ""
    for ch in code_only(Path(path).read_text(errors="replace")):
        if ch == "\n":
            line += 1
        if ch == "{":
            m = HEAD.search(head.strip())
            inside = any(kind == "fn" for kind, _, _ in stack)
            is_fn = bool(m) and not inside and m.group(1).split("::")[-1] not in CONTROL
            stack.append(("fn" if is_fn else "block", line, m.group(1) if is_fn else ""))
            head = ""
        elif ch == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "fn":
                    found.append((line - first + 1, first, name))
            head = ""
        elif ch == ";":
            head = ""
        else:
            head += ch
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file-limit", type=int, default=800)
    ap.add_argument("--function-limit", type=int, default=120)
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    files = subprocess.run(["git", "-C", str(root), "ls-files", "launcher", "trainer", "kernels"],
                           capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if f.endswith((".cpp", ".h", ".cu"))]
    over = []
    for f in files:
        n = (root / f).read_text(errors="replace").count("\n")
        if n > args.file_limit:
            over.append((n, f"file {f}: {n} lines"))
        for length, first, name in functions(root / f):
            if length > args.function_limit:
                over.append((length, f"function {f}:{first} {name}: {length} lines"))
    for _, text in sorted(over, reverse=True):
        print(text)
    total = sum((root / f).read_text(errors="replace").count("\n") for f in files)
    print(f"{len(files)} files, {total} lines; {len(over)} over the limits", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
