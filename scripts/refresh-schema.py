#!/usr/bin/env python3
"""Regenerate grpo-launch's schema data (data/schema/) from local checkouts.

    scripts/refresh-schema.py \
        --verl PATH_TO_VERL_CHECKOUT [--verl-refs v0.5.0,v0.6.1,v0.7.0] \
        --megatron PATH_TO_MEGATRON_CHECKOUT [--megatron-refs core_v0.13.1,...] \
        [--nccl-docs PATH] [--nccl-src PATH] \
        [--hccl PATH_TO_HICANN_HCCL_CHECKOUT] \
        --out data/schema

What it writes (see docs/schema-data.md):
  verl_keys.txt, verl_keys_fsdp.txt, verl_keys_megatron.txt, verl_key_history.tsv
      from --verl: verl/trainer/config/ppo_trainer.yaml and ppo_megatron_trainer.yaml,
      with their Hydra `defaults:` lists composed the way Hydra composes them.
  megatron_transformer_config.txt
      from --megatron: the fields of megatron.core TransformerConfig and of its base
      ModelParallelConfig, read with Python's ast module (Megatron is never imported).
  nccl_env.txt        (only with --nccl-docs and/or --nccl-src)
  hccl_env.txt        (only with --hccl)

Each PATH is a checkout's work tree; the files are read from that work tree.
--verl-refs / --megatron-refs name further git refs (tags, branches, commits) of the
same checkout; their files are read with `git show REF:path` (nothing is checked out)
and their keys are unioned in, so that keys of older releases stay known.

Needs python3 >= 3.9 and PyYAML (Debian/Ubuntu: apt-get install python3-yaml;
otherwise: pip install pyyaml).  Nothing else; no network access.
"""

import argparse
import ast
import datetime
import os
import posixpath
import re
import shlex
import subprocess
import sys
import textwrap

try:
    import yaml
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit(
        "refresh-schema.py: PyYAML is required to read verl's YAML configs.\n"
        "  Debian/Ubuntu: sudo apt-get install python3-yaml\n"
        "  otherwise:     python3 -m pip install pyyaml"
    )


class SchemaError(Exception):
    pass


# ---------------------------------------------------------------------------
# Reading files from a checkout's work tree or from one of its git refs
# ---------------------------------------------------------------------------


def _git(root, *args):
    try:
        out = subprocess.run(
            ["git", "-C", root] + list(args),
            check=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.decode("utf-8", "replace")


def _py_to_ere(pattern):
    """The few Python-regex escapes used here, as POSIX ERE for git grep (a superset match
    is fine: every hit is re-checked with the Python regex)."""
    return pattern.replace(r"\s", "[[:space:]]").replace(r"\b", "").replace(r"\w", "[[:alnum:]_]")


class Tree:
    """The files of a checkout: its work tree (ref=None) or one git ref of it."""

    def __init__(self, root, ref=None):
        self.root = os.path.abspath(root)
        self.ref = ref
        if not os.path.isdir(self.root):
            raise SchemaError(f"{root}: not a directory")
        self.is_git = _git(self.root, "rev-parse", "--git-dir") is not None
        if ref is not None and not self.is_git:
            raise SchemaError(f"{root}: not a git checkout, cannot read ref {ref}")
        if ref is not None and self.commit() is None:
            raise SchemaError(f"{root}: unknown git ref {ref}")

    def label(self):
        if self.ref is not None:
            return self.ref
        branch = _git(self.root, "rev-parse", "--abbrev-ref", "HEAD") if self.is_git else None
        branch = branch.strip() if branch else ""
        return f"work tree ({branch})" if branch and branch != "HEAD" else "work tree"

    def read(self, relpath):
        if self.ref is None:
            p = os.path.join(self.root, relpath)
            if not os.path.isfile(p):
                return None
            with open(p, encoding="utf-8") as f:
                return f.read()
        return _git(self.root, "show", f"{self.ref}:{relpath}")

    def exists(self, relpath):
        if self.ref is None:
            return os.path.exists(os.path.join(self.root, relpath))
        return _git(self.root, "cat-file", "-e", f"{self.ref}:{relpath}") is not None

    def listdir(self, relpath):
        """Names directly under relpath (files and folders), sorted."""
        if self.ref is None:
            p = os.path.join(self.root, relpath)
            return sorted(os.listdir(p)) if os.path.isdir(p) else []
        out = _git(self.root, "ls-tree", "--name-only", f"{self.ref}:{relpath}")
        return sorted(out.split()) if out else []

    def grep(self, pattern, relpath, exts=(".py",)):
        """[(path, line)] of lines under relpath matching the (Python) regex pattern."""
        rx = re.compile(pattern)
        hits = []
        if self.is_git:  # git grep is much faster than reading every file of a ref
            rev = [self.ref] if self.ref is not None else []
            out = _git(self.root, "grep", "-I", "-n", "-E", "--no-color", _py_to_ere(pattern), *rev,
                       "--", relpath) or ""
            for line in out.splitlines():
                if self.ref is not None:
                    line = line[len(self.ref) + 1:]
                path, _, rest = line.partition(":")
                _, _, text = rest.partition(":")
                if path.endswith(exts) and rx.search(text):
                    hits.append((path, text))
            return hits
        for rel in self.walk_files(relpath, exts):
            for text in (self.read(rel) or "").splitlines():
                if rx.search(text):
                    hits.append((rel, text))
        return hits

    def walk_files(self, relpath, exts):
        """Relative paths of all files under relpath whose name ends with one of exts."""
        res = []
        if self.ref is None:
            base = os.path.join(self.root, relpath)
            for d, _, files in os.walk(base):
                for fn in files:
                    if fn.endswith(exts):
                        res.append(os.path.relpath(os.path.join(d, fn), self.root))
        else:
            out = _git(self.root, "ls-tree", "-r", "--name-only", self.ref, "--", relpath)
            res = [p for p in (out or "").split("\n") if p.endswith(exts)]
        return sorted(res)

    def commit(self):
        if not self.is_git:
            return None
        out = _git(self.root, "rev-parse", "--verify", "--quiet", f"{self.ref or 'HEAD'}^{{commit}}")
        return out.strip() if out else None

    def describe(self):
        if not self.is_git:
            return None
        args = ["describe", "--tags", "--always"]
        if self.ref is None:
            args.append("--dirty")
        else:
            args.append(self.ref)
        out = _git(self.root, *args)
        return out.strip() if out else None

    def commit_date(self):
        if not self.is_git:
            return None
        out = _git(self.root, "log", "-1", "--format=%cs", self.ref or "HEAD")
        return out.strip() if out else None

    def provenance(self, version=None):
        """One line: version, commit, describe, date."""
        parts = []
        if version:
            parts.append(version)
        c = self.commit()
        if c:
            parts.append(f"commit {c}")
            d = self.describe()
            if d:
                parts.append(f"git describe {d}")
            dt = self.commit_date()
            if dt:
                parts.append(f"committed {dt}")
            if self.ref is None and d and d.endswith("-dirty"):
                parts.append("WORK TREE HAS LOCAL CHANGES")
        else:
            parts.append("not a git checkout: commit unknown")
        return f"{self.label()}: " + ", ".join(parts)


# ---------------------------------------------------------------------------
# verl: Hydra composition of the trainer configs, flattened to dotted keys
# ---------------------------------------------------------------------------

VERL_CONFIG_DIR = "verl/trainer/config"
VERL_PRIMARIES = {  # variant -> primary config (name without .yaml, relative to VERL_CONFIG_DIR)
    "fsdp": "ppo_trainer",
    "megatron": "ppo_megatron_trainer",
}

# Mappings whose children are free-form: the value is handed on as **kwargs (to
# Megatron's TransformerConfig / DDP / optimizer config, HF's AutoConfig, vLLM/SGLang
# engine args, ray.init, nsys options, ...), so any child key is legitimate there.
# Matched against the last component of a key.  Besides these, a mapping is free-form
# where it is `{}` somewhere in the YAML, and, when no YAML spells out its keys, where it
# is an interpolation defaulting to `{}`, a dict-typed field of verl's config dataclass,
# or a `*_kwargs` dict that verl's code reads with .get().  Nodes with `_target_` never are.
VERL_OPEN_NAMES = {
    "override_config": "HF AutoConfig overrides (model.override_config)",
    "override_transformer_config": "Megatron TransformerConfig fields (megatron_transformer_config.txt)",
    "override_ddp_config": "Megatron DistributedDataParallelConfig fields",
    "override_mcore_model_config": "Megatron model-provider kwargs",
    "override_optimizer_config": "optimizer kwargs",
    "engine_kwargs": "inference-engine kwargs (vllm/sglang/trtllm sub-dicts)",
    "ray_init": "ray.init(**kwargs)",
    "runtime_env": "Ray runtime_env",
    "controller_nsight_options": "nsys command-line options",
    "worker_nsight_options": "nsys command-line options",
    "kw_args": "torch memory profiler kwargs",
    "reward_kwargs": "custom reward function kwargs",
    "apply_chat_template_kwargs": "tokenizer.apply_chat_template kwargs",
    "wrap_policy": "FSDP auto-wrap policy kwargs (min_num_params, transformer_layer_cls_to_wrap, ...)",
}
VERL_OPEN_PATTERNS = [
    re.compile(r"^override_\w+$"),  # every override_* dict is applied as kwargs
]

_INTERP_EMPTY_DICT = re.compile(r"^\$\{.*,\s*\{\s*\}\s*\}$")  # ${oc.select:...,{}}


class Node:
    __slots__ = ("children", "scalar", "last_str", "empty_map", "interp_map", "open_type", "sources",
                 "dataclass_only", "code_only")

    def __init__(self):
        self.children = {}
        self.scalar = False  # took a scalar / list / null value somewhere
        self.last_str = None  # the last string value merged in (for `_target_`)
        self.empty_map = False  # was `{}` somewhere
        self.interp_map = False  # was an interpolation defaulting to {} somewhere
        self.open_type = False  # typed as a dict in verl's config dataclass
        self.sources = set()  # config files that set it
        self.dataclass_only = False  # not in any YAML: a field of the node's config dataclass
        self.code_only = False  # not in any YAML nor dataclass: read with .get() in verl's code


def _node_at(root, path):
    n = root
    for p in path:
        n = n.children.setdefault(p, Node())
    return n


def _merge(node, value, source):
    """Union-merge a YAML value into node (OmegaConf merges dict into dict
    recursively; where one side is a scalar the key set of both is kept, so that
    e.g. a mapping replaced by an ${oc.select:...} interpolation keeps its keys)."""
    node.sources.add(source)
    if isinstance(value, dict):
        if not value:
            node.empty_map = True
        for k, v in value.items():
            if not isinstance(k, str):
                raise SchemaError(f"{source}: non-string key {k!r} (YAML 1.1 boolean/number?)")
            _merge(node.children.setdefault(k, Node()), v, source)
    else:
        node.scalar = True
        if isinstance(value, str):
            node.last_str = value
            if _INTERP_EMPTY_DICT.match(value.strip()):
                node.interp_map = True


_PKG_HEADER = re.compile(r"^#\s*@package\s+(\S+)\s*$")


class HydraComposer:
    """The subset of Hydra's defaults-list semantics that verl's configs use:
    group entries `group@pkg: option`, config entries `name` / `name@pkg`,
    `_self_`, relative (`../x`) and absolute (`/x`) groups, `override` and
    `optional` keywords, `# @package` headers, `_global_` packages.  Packages
    are relative to the including config's package, as in Hydra >= 1.1."""

    def __init__(self, tree, config_dir):
        self.tree = tree
        self.config_dir = config_dir
        self.loaded = []  # config files used, in load order

    def _load(self, name):
        rel = f"{self.config_dir}/{name}.yaml"
        text = self.tree.read(rel)
        if text is None:
            raise SchemaError(f"{self.tree.label()}: {rel} not found")
        header = None
        for line in text.splitlines():
            s = line.strip()
            if not s:
                continue
            if not s.startswith("#"):
                break
            m = _PKG_HEADER.match(s)
            if m:
                header = m.group(1)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SchemaError(f"{self.tree.label()}: {rel}: {e}")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise SchemaError(f"{rel}: top level is not a mapping")
        self.loaded.append(rel)
        return rel, header, data

    @staticmethod
    def _final_package(parent_pkg, pkg, name):
        if "_name_" in pkg:
            pkg = pkg.replace("_name_", posixpath.basename(name))
        if parent_pkg == "":
            ret = pkg
        elif pkg == "":
            ret = parent_pkg
        else:
            ret = f"{parent_pkg}.{pkg}"
        i = ret.rfind("_global_")
        if i != -1:
            ret = ret[i + len("_global_") + 1:]
        return ret

    def compose(self, root, name, parent_pkg="", explicit_pkg=None, rel_group=""):
        rel, header, data = self._load(name)
        pkg = explicit_pkg
        if pkg is None:
            pkg = header if header is not None else rel_group.replace("/", ".")
        if pkg == "_group_":
            pkg = rel_group.replace("/", ".")
        my_pkg = self._final_package(parent_pkg, pkg, name)
        defaults = data.pop("defaults", None) or []
        if not isinstance(defaults, list):
            raise SchemaError(f"{rel}: defaults is not a list")
        my_dir = posixpath.dirname(name)

        # `override group: option` entries replace the option of an earlier entry.
        overrides = {}
        entries = []
        for e in defaults:
            if isinstance(e, dict):
                if len(e) != 1:
                    raise SchemaError(f"{rel}: defaults entry {e!r} has more than one key")
                (k, v), = e.items()
                words = k.split()
                is_override = "override" in words[:-1]
                optional = "optional" in words[:-1]
                grp, _, at = words[-1].partition("@")
                if is_override:
                    overrides[grp] = v
                    continue
                entries.append(("group", grp, at or None, v, optional))
            elif isinstance(e, str):
                entries.append(("config", e, None, None, False) if e == "_self_" else
                               ("config",) + tuple(e.partition("@")[::2]) + (None, False))
            else:
                raise SchemaError(f"{rel}: defaults entry {e!r} not understood")

        self_done = False
        for kind, what, at, option, optional in entries:
            at = at or None
            if kind == "config" and what == "_self_":
                _merge(_node_at(root, [p for p in my_pkg.split(".") if p]), data, rel)
                self_done = True
                continue
            if kind == "group":
                option = overrides.get(what, option)
                if option is None or option == "???":
                    continue  # nothing selected (null) or mandatory choice left open
                grp_abs = what[1:] if what.startswith("/") else posixpath.normpath(posixpath.join(my_dir, what))
                rel_grp = what[1:] if what.startswith("/") else what
                options = option if isinstance(option, list) else [option]
                for opt in options:
                    child = f"{grp_abs}/{opt}"
                    if optional and not self.tree.exists(f"{self.config_dir}/{child}.yaml"):
                        continue
                    self.compose(root, child, my_pkg, at, rel_grp)
            else:
                path_abs = what[1:] if what.startswith("/") else posixpath.normpath(posixpath.join(my_dir, what))
                rel_path = what[1:] if what.startswith("/") else what
                rel_grp = posixpath.dirname(rel_path)
                self.compose(root, path_abs, my_pkg, at, rel_grp)
        if not self_done:  # Hydra >= 1.1: primary content goes last when _self_ is absent
            _merge(_node_at(root, [p for p in my_pkg.split(".") if p]), data, rel)
        return root


def _is_open(name, node):
    if "_target_" in node.children:  # instantiated as a config dataclass: fixed fields
        return False
    if node.empty_map:
        return True
    # A dict-typed dataclass field or an ${oc.select:...,{}} interpolation is free-form
    # only where no YAML spells out its keys; where one does, those keys are the schema.
    if (node.interp_map or node.open_type) and not any(not c.dataclass_only for c in node.children.values()):
        return True
    if name in VERL_OPEN_NAMES:
        return True
    if node.code_only and name.endswith("_kwargs"):
        return True
    return any(p.match(name) for p in VERL_OPEN_PATTERNS)


def flatten(root):
    """(all dotted keys (inner mappings too) plus `key.*` for free-form mappings,
    {key: origin} for keys no YAML sets: "dataclass" or "code")."""
    keys, origin = set(), {}

    def walk(node, prefix):
        for name, child in node.children.items():
            key = f"{prefix}.{name}" if prefix else name
            keys.add(key)
            o = "dataclass" if child.dataclass_only else "code" if child.code_only else None
            if o:
                origin[key] = o
            if _is_open(name, child):
                keys.add(key + ".*")
                if o:
                    origin[key + ".*"] = o
            walk(child, key)

    walk(root, "")
    return keys, origin


# Plain (non-dataclass) config mappings that verl's code reads with `config.X.get("name")`
# although no YAML declares `name`: users set those with `+X.name=...` (e.g.
# data.gen_batch_size, reward_model.reward_kwargs).  Only `config.<path>.get("<name>")`
# where <path> starts at a top-level key of the composed config and names an existing
# mapping is taken; `x.get(...)` on other variables is not followed.
_CODE_GET = re.compile(r"\bconfig\.((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\.get\(\s*[\"']([A-Za-z_]\w*)[\"']")


def augment_with_code_gets(root, tree):
    for rel, line in tree.grep(r"config\.[A-Za-z0-9_.]+\.get\(", "verl"):
        for m in _CODE_GET.finditer(line):
            path = m.group(1).split(".")
            if path[0] not in root.children:
                continue
            node = root
            for p in path:
                node = node.children.get(p)
                if node is None:
                    break
            if node is None or "_target_" in node.children or (node.scalar and not node.children):
                continue  # unknown parent, a dataclass (fixed fields) or a scalar
            if m.group(2) not in node.children:
                child = node.children[m.group(2)] = Node()
                child.code_only = True
                child.sources.add(rel)


# verl instantiates every YAML mapping that has `_target_: verl....SomeConfig` as that
# dataclass (hydra.utils.instantiate via verl.utils.config.omega_conf_to_dataclass).
# Unknown keys there fail; dataclass fields that the YAML leaves out are accepted
# (`+key=value`).  So the fields of those dataclasses are read too (with ast).
_DC_DICT_TYPE = re.compile(r"^(?:Optional\[)?\s*(?:dict|Dict|typing\.Dict|DictConfig)\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIMPLE_TYPE_WORDS = {"Optional", "Union", "None", "Literal", "typing", "str", "int", "float", "bool",
                      "list", "List", "tuple", "Tuple", "dict", "Dict", "DictConfig", "ListConfig"}


class DataclassIndex:
    def __init__(self, tree):
        self.tree = tree
        self.by_file = {}  # rel path -> {class name: ClassDef}
        self._all = None
        self.missing = set()  # `_target_`s that name no class (reported once)

    def _classes(self, rel):
        if rel not in self.by_file:
            src = self.tree.read(rel)
            classes = {}
            if src is not None:
                try:
                    mod = ast.parse(src, filename=rel)
                except SyntaxError:
                    mod = None
                if mod is not None:
                    for n in mod.body:
                        if isinstance(n, ast.ClassDef):
                            classes[n.name] = n
            self.by_file[rel] = classes
        return self.by_file[rel]

    def _module_files(self, dotted):
        base = dotted.replace(".", "/")
        files = []
        if self.tree.exists(base + ".py"):
            files.append(base + ".py")
        files += self.tree.walk_files(base, (".py",)) if self.tree.exists(base) else []
        return files

    def find(self, name, near_files=()):
        for rel in near_files:
            c = self._classes(rel).get(name)
            if c is not None:
                return rel, c
        if self._all is None:  # fall back to every config-ish module of the package
            self._all = []
            for top in ("verl/base_config.py",):
                self._all.append(top)
            for d in ("verl/workers/config", "verl/trainer/config", "verl/utils/profiler", "verl/workers"):
                if self.tree.exists(d):
                    self._all += self.tree.walk_files(d, (".py",))
        for rel in self._all:
            c = self._classes(rel).get(name)
            if c is not None:
                return rel, c
        return None, None

    def resolve_target(self, target):
        parts = target.split(".")
        if len(parts) < 2 or parts[0] != "verl":
            return None, None
        mod, name = ".".join(parts[:-1]), parts[-1]
        files = self._module_files(mod)
        return self.find(name, files)

    def fields(self, rel, cls, seen=None):
        """[(name, annotation, near_files)] including inherited fields (base first)."""
        seen = seen or set()
        if (rel, cls.name) in seen:
            return []
        seen.add((rel, cls.name))
        out = []
        for b in cls.bases:
            bname = ast.unparse(b).split(".")[-1]
            if bname in ("object", "Mapping", "abc", "Generic"):
                continue
            brel, bcls = self.find(bname, [rel])
            if bcls is not None:
                out += self.fields(brel, bcls, seen)
        for st in cls.body:
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            name = st.target.id
            ann = " ".join(ast.unparse(st.annotation).split())
            if ann.startswith(("ClassVar", "typing.ClassVar")) or name.startswith("_"):
                continue
            v = st.value
            if isinstance(v, ast.Call) and ast.unparse(v.func).split(".")[-1] == "field":
                if any(kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                       for kw in v.keywords):
                    continue
            out = [f for f in out if f[0] != name] + [(name, ann, rel)]
        return out


def augment_with_dataclasses(node, index, cls_ref=None, depth=0):
    """Add the fields of node's config dataclass that the YAML leaves out; mark
    dict-typed fields free-form; recurse into children."""
    if depth > 12:
        return
    rel, cls = cls_ref if cls_ref else (None, None)
    tgt = node.children.get("_target_")
    if tgt is not None and tgt.last_str:
        rel, cls = index.resolve_target(tgt.last_str)
        if cls is None and tgt.last_str not in index.missing:
            index.missing.add(tgt.last_str)
            print(f"note: {index.tree.label()}: no dataclass {tgt.last_str} (a `_target_` in its YAML); "
                  "only the YAML keys are used there", file=sys.stderr)
    typed = {}
    if cls is not None:
        for name, ann, frel in index.fields(rel, cls):
            is_dict = bool(_DC_DICT_TYPE.match(ann))
            idents = set(_IDENT.findall(re.sub(r"(['\"]).*?\1", "", ann))) - _SIMPLE_TYPE_WORDS
            child = node.children.get(name)
            if child is None:
                # A field the YAML leaves out: list it when it is plain data (scalars,
                # lists, dicts); fields typed Any or as another class are filled in by
                # verl at run time (model_config, engine, hf_config, tokenizer, ...).
                if not is_dict and idents:
                    continue
                child = node.children[name] = Node()
                child.dataclass_only = True
            if is_dict:
                child.open_type = True
            sub = None
            for ident in sorted(idents):
                r2, c2 = index.find(ident, [frel])
                if c2 is not None and any(
                    isinstance(d, ast.Name) and d.id == "dataclass" or
                    isinstance(d, ast.Call) and ast.unparse(d.func).endswith("dataclass")
                    for d in c2.decorator_list
                ):
                    sub = (r2, c2)
                    break
            typed[name] = sub
    for name, child in node.children.items():
        augment_with_dataclasses(child, index, typed.get(name), depth + 1)


def compose_verl(tree, variant, index=None):
    primary = VERL_PRIMARIES[variant]
    if tree.read(f"{VERL_CONFIG_DIR}/{primary}.yaml") is None:
        return None, None, []
    comp = HydraComposer(tree, VERL_CONFIG_DIR)
    root = comp.compose(Node(), primary)
    augment_with_dataclasses(root, index or DataclassIndex(tree))
    augment_with_code_gets(root, tree)
    keys, origin = flatten(root)
    return keys, origin, comp.loaded


def verl_version(tree):
    v = tree.read("verl/version/version")
    return f"verl {v.strip()}" if v else "verl (version file not found)"


# ---------------------------------------------------------------------------
# Megatron-Core: dataclass fields via ast
# ---------------------------------------------------------------------------

MCORE_TC_FILE = "megatron/core/transformer/transformer_config.py"
MCORE_MPC_FILE = "megatron/core/model_parallel_config.py"
MCORE_EXTRA_CLASSES = ["MLATransformerConfig"]  # subclasses verl also builds for MLA models


def _dataclass_fields(src, class_name, filename):
    """[(name, type_str, init)], base class names] of a @dataclass in src."""
    tree = ast.parse(src, filename=filename)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            bases = [ast.unparse(b) for b in node.bases]
            fields = []
            for st in node.body:
                if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                    continue
                ann = ast.unparse(st.annotation)
                if ann.startswith(("ClassVar", "typing.ClassVar")):
                    continue
                init = True
                v = st.value
                if isinstance(v, ast.Call) and ast.unparse(v.func).split(".")[-1] == "field":
                    for kw in v.keywords:
                        if kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                            init = False
                fields.append((st.target.id, " ".join(ann.split()), init))
            return fields, bases
    raise SchemaError(f"{filename}: class {class_name} not found")


def megatron_fields(tree):
    """{name: (type, init, class)} for TransformerConfig (+ ModelParallelConfig)
    and, separately, the extra fields of MLATransformerConfig."""
    tc_src = tree.read(MCORE_TC_FILE)
    mpc_src = tree.read(MCORE_MPC_FILE)
    if tc_src is None or mpc_src is None:
        raise SchemaError(f"{tree.label()}: {MCORE_TC_FILE} or {MCORE_MPC_FILE} not found")
    fields = {}
    mpc, _ = _dataclass_fields(mpc_src, "ModelParallelConfig", MCORE_MPC_FILE)
    for n, t, i in mpc:
        fields[n] = (t, i, "ModelParallelConfig")
    tc, bases = _dataclass_fields(tc_src, "TransformerConfig", MCORE_TC_FILE)
    if "ModelParallelConfig" not in bases:
        raise SchemaError(f"{tree.label()}: TransformerConfig bases are {bases}, expected ModelParallelConfig")
    for n, t, i in tc:
        fields[n] = (t, i, "TransformerConfig")
    extra = {}
    for cls in MCORE_EXTRA_CLASSES:
        try:
            ef, _ = _dataclass_fields(tc_src, cls, MCORE_TC_FILE)
        except SchemaError:
            continue
        for n, t, i in ef:
            if n not in fields:
                extra[n] = (t, i, cls)
    return fields, extra


def megatron_version(tree):
    src = tree.read("megatron/core/package_info.py")
    if not src:
        return "megatron-core (package_info.py not found)"
    vals = {}
    for k in ("MAJOR", "MINOR", "PATCH", "PRE_RELEASE"):
        m = re.search(rf"^{k}\s*=\s*['\"]?([^'\"\n]*)['\"]?\s*$", src, re.M)
        vals[k] = m.group(1).strip() if m else "?"
    return f"megatron-core {vals['MAJOR']}.{vals['MINOR']}.{vals['PATCH']}{vals['PRE_RELEASE']}"


# ---------------------------------------------------------------------------
# NCCL: the user guide's env.rst, plus (optionally) the variables its source reads
# ---------------------------------------------------------------------------

NCCL_ENV_RST = "docs/userguide/source/env.rst"
_NCCL_NAME = re.compile(r"NCCL_[A-Z0-9_]*[A-Z0-9]")

# Variables with an NCCL_ prefix that PyTorch's ProcessGroupNCCL reads itself, as
# deprecated aliases of its TORCH_NCCL_* variables (pytorch/pytorch,
# torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp at commit
# 4c2f2809470193ece84a96d9034f9d31d36aede4).  NCCL does not read them.
PYTORCH_NCCL_ALIASES = {
    "NCCL_ASYNC_ERROR_HANDLING": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "NCCL_BLOCKING_WAIT": "TORCH_NCCL_BLOCKING_WAIT",
    "NCCL_DESYNC_DEBUG": "TORCH_NCCL_DESYNC_DEBUG",
    "NCCL_ENABLE_TIMING": "TORCH_NCCL_ENABLE_TIMING",
    "NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK": "TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK",
}
PYTORCH_SOURCE = ("pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp "
                  "@ 4c2f2809470193ece84a96d9034f9d31d36aede4")


def parse_nccl_env_rst(text):
    """{name: (status, note)} from env.rst: every `NCCL_...` section title (underlined
    with '-'), its "(since ..., deprecated/removed in ...)" line, and the old names
    given there or as "(formerly NCCL_X)"."""
    lines = text.splitlines()
    out = {}
    mentioned = set(_NCCL_NAME.findall(text))
    for i in range(1, len(lines)):
        if not re.fullmatch(r"-{3,}\s*", lines[i]) or not lines[i - 1].startswith("NCCL_"):
            continue
        title = lines[i - 1].strip()
        names = _NCCL_NAME.findall(title)
        main = names[0]
        # first non-empty line after the underline: "(since 2.x, deprecated in 2.y)"
        info = ""
        for j in range(i + 1, min(i + 4, len(lines))):
            if lines[j].strip():
                info = lines[j].strip() if lines[j].strip().startswith("(") else ""
                break
        status, note = "", ""
        m = re.search(r"(deprecated|removed) in ([0-9][0-9.]*[0-9])", info)
        if m:
            status = "deprecated"
            note = f"{m.group(1)} in {m.group(2)}"
            see = re.search(r"see (NCCL_[A-Z0-9_]+)", info)
            if see:
                note += f"; see {see.group(1)}"
        out[main] = (status, note)
        old = [n for n in names[1:]] + [n for n in _NCCL_NAME.findall(info) if n != main]
        for n in old:
            if n not in out:
                out[n] = ("deprecated", f"old name of {main}")
    return out, mentioned


_NCCL_SRC_PATTERNS = [
    (re.compile(r'NCCL_PARAM\(\s*\w+\s*,\s*"([A-Z0-9_]+)"'), lambda s: "NCCL_" + s),
    (re.compile(r"DEFINE_NCCL_PARAM\(\s*\w+\s*,[^,]+,\s*(NCCL_[A-Z0-9_]+)\s*,"), lambda s: s),
    (re.compile(r'\b(?:ncclGetEnv|getenv|ncclGetLevel)\s*\([^)]*?"(NCCL_[A-Z0-9_]+)"'), lambda s: s),
    (re.compile(r'ncclGetLevel\s*\([^;]*?"(NCCL_[A-Z0-9_]+)"\s*\)'), lambda s: s),
]


def scan_nccl_source(tree):
    """{name: first file} of NCCL_* variables that NCCL's C/C++ source reads."""
    found = {}
    for top in ("src", "plugins"):
        for rel in tree.walk_files(top, (".cc", ".cpp", ".c", ".h", ".cu", ".cuh")):
            text = tree.read(rel) or ""
            for rx, fix in _NCCL_SRC_PATTERNS:
                for m in rx.finditer(text):
                    found.setdefault(fix(m.group(1)), rel)
    return found


def nccl_version(tree):
    mk = tree.read("makefiles/version.mk") if tree else None
    if not mk:
        return None
    v = {}
    for k in ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH", "PKG_REVISION"):
        m = re.search(rf"^{k}\s*:=\s*(\S+)", mk, re.M)
        v[k] = m.group(1) if m else "?"
    return f"NCCL {v['NCCL_MAJOR']}.{v['NCCL_MINOR']}.{v['NCCL_PATCH']}-{v['PKG_REVISION']}"


# ---------------------------------------------------------------------------
# HCCL: hicann/hccl's env-variable reference (one page per variable) and source
# ---------------------------------------------------------------------------

HCCL_DOC_DIRS = ["docs/zh/user_guide/hccl_env", "docs/en/user_guide/hccl_env"]
_HCCL_NAME = re.compile(r"^(HCCL|HCOMM)_[A-Z0-9_]*[A-Z0-9]$")
_HCCL_SRC = re.compile(r'\b\w*[Gg]et[Ee]nv\w*\s*\(\s*"((?:HCCL|HCOMM)_[A-Z0-9_]*[A-Z0-9])"')

_TORCH_NPU_DOC = ("torch_npu env reference, gitcode.com/Ascend/pytorch/blob/v2.7.1-7.3.0/docs/zh/"
                  "environment_variable_reference/collective_communication.md")

# Documented by Huawei elsewhere than hicann/hccl's docs: the CANN environment
# variable reference of older CANN releases, and torch_npu's own variables.
HCCL_EXTRA = {
    "HCCL_P2P_DISABLE": ("cann-doc", "CANN 6.3.RC1 env reference, hiascend.com/doc_center/source/zh/canncommercial/63RC1/modeldevpt/ptmigr/ptmigr_0110.html"),
    "HCCL_ALLTOALL_Z_COPY": ("cann-doc", "CANN 6.3.RC1 env reference, hiascend.com/doc_center/source/zh/canncommercial/63RC1/modeldevpt/ptmigr/ptmigr_0110.html"),
    "HCCL_HOST_RDMA_ENABLE": ("cann-doc", "CANN 6.0.RC1 env reference, hiascend.com/doc_center/source/zh/canncommercial/60RC1/modeldev/tfmigr1/tfmigr1_000058.html"),
    "HCCL_CONCURRENT_ENABLE": ("cann-doc", "CANN 8.1.RC1 env reference, hiascend.com/doc_center/source/zh/canncommercial/81RC1/apiref/envvar/envref_07_0084.html"),
    "HCCL_ASYNC_ERROR_HANDLING": ("torch_npu", _TORCH_NPU_DOC),
    "HCCL_DESYNC_DEBUG": ("torch_npu", _TORCH_NPU_DOC),
    "HCCL_EVENT_TIMEOUT": ("torch_npu", _TORCH_NPU_DOC),
}


def hccl_docs(tree):
    names = {}
    for d in HCCL_DOC_DIRS:
        for fn in tree.listdir(d):
            stem = fn[:-3] if fn.endswith(".md") else None
            if stem and _HCCL_NAME.match(stem):
                names.setdefault(stem, f"{d}/{fn}")
    return names


def hccl_source(tree):
    found = {}
    for rel in tree.walk_files("src", (".cc", ".cpp", ".c", ".h", ".hpp")):
        for m in _HCCL_SRC.finditer(tree.read(rel) or ""):
            found.setdefault(m.group(1), rel)
    return found


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def write_file(path, header_lines, body_lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for h in header_lines:
            f.write(("# " + h).rstrip() + "\n")
        for b in body_lines:
            f.write(b + "\n")
    print(f"wrote {path}: {len(body_lines)} entries", file=sys.stderr)


def split_refs(s):
    return [r for r in (s or "").split(",") if r.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verl", required=True, help="verl checkout (github.com/volcengine/verl)")
    ap.add_argument("--verl-refs", default="",
                    help="comma-separated git refs of the verl checkout, oldest first, whose keys are "
                         "unioned into verl_keys.txt (the work tree is always the newest)")
    ap.add_argument("--megatron", required=True, help="Megatron-LM checkout (github.com/NVIDIA/Megatron-LM)")
    ap.add_argument("--megatron-refs", default="",
                    help="comma-separated git refs of the Megatron-LM checkout, oldest first, whose "
                         "fields are unioned in (the work tree is always the newest)")
    ap.add_argument("--nccl-docs", help="NCCL's docs/userguide/source/env.rst, or an NCCL checkout")
    ap.add_argument("--nccl-src", help="NCCL checkout whose src/ and plugins/ are scanned for the variables "
                                       "it reads (default: --nccl-docs when that is a checkout)")
    ap.add_argument("--hccl", help="hicann/hccl checkout (github.com/hicann/hccl)")
    ap.add_argument("--out", required=True, help="output folder, e.g. data/schema")
    ap.add_argument("--date", default=datetime.date.today().isoformat(), help="extraction date for headers")
    args = ap.parse_args(argv)

    cmd = "scripts/refresh-schema.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    os.makedirs(args.out, exist_ok=True)
    common = [f"extracted: {args.date}", f"command: {cmd}"]

    # ---- verl ---------------------------------------------------------------
    verl_trees = [Tree(args.verl, r) for r in split_refs(args.verl_refs)] + [Tree(args.verl)]
    primary = verl_trees[-1]
    per = {}  # (tree index, variant) -> keys
    per_origin = {}  # (tree index, variant) -> {key: "dataclass" | "code"} for keys no YAML sets
    loaded = {}
    for ti, t in enumerate(verl_trees):
        index = DataclassIndex(t)
        for variant in VERL_PRIMARIES:
            keys, origin, files = compose_verl(t, variant, index)
            if keys is None:
                print(f"note: {t.label()}: no {VERL_PRIMARIES[variant]}.yaml", file=sys.stderr)
                continue
            per[(ti, variant)] = keys
            per_origin[(ti, variant)] = origin
            loaded[(ti, variant)] = files
    last = len(verl_trees) - 1
    if (last, "fsdp") not in per or (last, "megatron") not in per:
        raise SchemaError(f"{args.verl}: work tree lacks {VERL_CONFIG_DIR}/ppo_trainer.yaml or ppo_megatron_trainer.yaml")

    def tree_line(t):
        return t.provenance(verl_version(t))

    fmt_keys = [
        "format: one dotted Hydra key per line, sorted; inner mappings are listed too.",
        "A line `KEY.*` means KEY is a free-form mapping: any child key below KEY is valid",
        "(kwargs handed on to another library; for ...megatron.override_transformer_config.*",
        "check the child against megatron_transformer_config.txt).",
        "Also listed: fields of the config dataclasses verl instantiates (`_target_: verl...Config`)",
        "that the YAML leaves out, and keys verl's code reads with `config.X.get(\"KEY\")` from plain",
        "mappings; both exist only when added as `+KEY=VALUE` (verl_key_history.tsv column ORIGIN).",
    ]
    src_verl = "source: https://github.com/volcengine/verl " + VERL_CONFIG_DIR + "/ (Hydra defaults lists composed)"
    for variant in VERL_PRIMARIES:
        keys = per[(last, variant)]
        write_file(
            os.path.join(args.out, f"verl_keys_{variant}.txt"),
            [f"verl {variant} trainer config keys: {VERL_CONFIG_DIR}/{VERL_PRIMARIES[variant]}.yaml composed",
             src_verl,
             "version: " + tree_line(primary),
             ] + textwrap.wrap("config files composed: " + " ".join(
                 dict.fromkeys(p[len(VERL_CONFIG_DIR) + 1:] for p in loaded[(last, variant)])),
                 width=100, subsequent_indent="  ", break_on_hyphens=False)
            + common + fmt_keys,
            sorted(keys),
        )
    union, yaml_keys, dc_keys = set(), set(), set()
    for idx, ks in per.items():
        union |= ks
        yaml_keys |= ks - set(per_origin[idx])
        dc_keys |= {k for k, o in per_origin[idx].items() if o == "dataclass"}
    cur_f, cur_m = per[(last, "fsdp")], per[(last, "megatron")]
    write_file(
        os.path.join(args.out, "verl_keys.txt"),
        ["verl PPO/GRPO trainer config keys: union of the FSDP (ppo_trainer.yaml) and Megatron",
         "(ppo_megatron_trainer.yaml) trainer configs of every verl version below.",
         src_verl,
         "versions (newest last):"]
        + ["  " + tree_line(t) for t in verl_trees]
        + common + fmt_keys + [
            "Per key, which variant and version has it: verl_key_history.tsv; current-only lists:",
            "verl_keys_fsdp.txt and verl_keys_megatron.txt.",
            f"counts: {len(union)} lines here; current fsdp {len(cur_f)}, megatron {len(cur_m)}, "
            f"both {len(cur_f & cur_m)}; not set by any YAML: {len(dc_keys - yaml_keys)} from config dataclasses, "
            f"{len(union - yaml_keys - dc_keys)} from code",
        ],
        sorted(union),
    )
    labels = [t.ref if t.ref is not None else "current" for t in verl_trees]
    hist = []
    for k in sorted(union):
        variants = sorted({v for (ti, v), ks in per.items() if k in ks and ti == last})
        vers = [labels[ti] for ti in range(len(verl_trees)) if any(k in per.get((ti, v), ()) for v in VERL_PRIMARIES)]
        origin = "yaml" if k in yaml_keys else "dataclass" if k in dc_keys else "code"
        hist.append(f"{k}\t{','.join(variants) if variants else '-'}\t{','.join(vers)}\t{origin}")
    write_file(
        os.path.join(args.out, "verl_key_history.tsv"),
        ["verl trainer config keys with where they occur.",
         src_verl,
         "versions (newest last; `current` is the last one):"]
        + ["  " + ("current = " if t.ref is None else "") + tree_line(t) for t in verl_trees]
        + common + [
            "format: KEY<TAB>VARIANTS<TAB>VERSIONS<TAB>ORIGIN",
            "  VARIANTS: fsdp and/or megatron = the current trainer configs that have KEY; `-` = none",
            "  (KEY exists only in older versions); VERSIONS: every version listed above that has KEY;",
            "  ORIGIN: yaml = set in a config YAML (plain `KEY=VALUE` works); dataclass = only a field of",
            "  the config dataclass verl instantiates there; code = only read by verl's code with",
            "  `config.PARENT.get(\"NAME\")`; dataclass and code keys need `+KEY=VALUE`.",
        ],
        hist,
    )

    # ---- Megatron -----------------------------------------------------------
    mtrees = [Tree(args.megatron, r) for r in split_refs(args.megatron_refs)] + [Tree(args.megatron)]
    mlabels = [t.ref if t.ref is not None else "current" for t in mtrees]
    per_m = [megatron_fields(t) for t in mtrees]
    names = set()
    for f, e in per_m:
        names |= set(f) | set(e)
    body = []
    for n in sorted(names):
        present = [i for i, (f, e) in enumerate(per_m) if n in f or n in e]
        newest = present[-1]
        f, e = per_m[newest]
        typ, init, cls = f[n] if n in f else e[n]
        notes = []
        if cls in MCORE_EXTRA_CLASSES:
            notes.append(f"class={cls}")
        if not init:
            notes.append("init=False")
        if present[0] != 0:
            notes.append(f"since={mlabels[present[0]]}")
        if newest != len(mtrees) - 1:
            notes.append(f"removed={mlabels[newest + 1]}")
        if present != list(range(present[0], newest + 1)):
            notes.append("missing-in=" + ",".join(mlabels[i] for i in range(present[0], newest) if i not in present))
        body.append("\t".join([n, typ] + ([";".join(notes)] if notes else [])))
    mcur, mextra = per_m[-1]
    write_file(
        os.path.join(args.out, "megatron_transformer_config.txt"),
        ["Megatron-Core TransformerConfig fields (with those inherited from ModelParallelConfig)",
         f"source: https://github.com/NVIDIA/Megatron-LM {MCORE_TC_FILE} (class TransformerConfig,",
         f"  class MLATransformerConfig) and {MCORE_MPC_FILE} (class ModelParallelConfig), read with ast",
         "versions (oldest first; `current` is the last one):"]
        + ["  " + ("current = " if t.ref is None else "") + t.provenance(megatron_version(t)) for t in mtrees]
        + common + [
            "format: NAME<TAB>TYPE[<TAB>NOTES]; TYPE is the annotation as written in the newest version",
            "that has the field.  NOTES (`;`-separated): class=MLATransformerConfig = only in that subclass",
            "(used for MLA models such as DeepSeek-V3); init=False = not a constructor argument;",
            "since=REF = absent before REF; removed=REF = absent from REF on; missing-in=REFS = absent there.",
            f"counts: current {len(mcur)} TransformerConfig+ModelParallelConfig fields, {len(mextra)} MLA-only; "
            f"{len(body)} lines over all versions",
        ],
        body,
    )

    # ---- NCCL ---------------------------------------------------------------
    if args.nccl_docs or args.nccl_src:
        docs_text, docs_tree, docs_where = None, None, None
        if args.nccl_docs:
            if os.path.isdir(args.nccl_docs):
                docs_tree = Tree(args.nccl_docs)
                docs_text = docs_tree.read(NCCL_ENV_RST)
                docs_where = NCCL_ENV_RST
                if docs_text is None:
                    raise SchemaError(f"{args.nccl_docs}: {NCCL_ENV_RST} not found")
            else:
                with open(args.nccl_docs, encoding="utf-8") as f:
                    docs_text = f.read()
                docs_where = os.path.basename(args.nccl_docs)
        src_tree = Tree(args.nccl_src) if args.nccl_src else docs_tree
        entries = {}
        mentioned = set()
        if docs_text is not None:
            documented, mentioned = parse_nccl_env_rst(docs_text)
            entries.update(documented)
        src_names = scan_nccl_source(src_tree) if src_tree else {}
        for n, rel in sorted(src_names.items()):
            if n not in entries:
                where = rel.split("/")[0]
                note = "read by NCCL source" + (f" ({rel.split('/')[1]} plugin)" if where == "plugins" else "")
                if n in mentioned:
                    note += "; mentioned in env.rst"
                entries[n] = ("undocumented", note)
        for n, torch_name in PYTORCH_NCCL_ALIASES.items():
            if n not in entries:
                entries[n] = ("pytorch", f"read by PyTorch ProcessGroupNCCL; deprecated alias of {torch_name}")
        body = []
        for n in sorted(entries):
            st, note = entries[n]
            if not st:
                body.append(n)
            else:
                body.append("\t".join([n, st] + ([note] if note else [])))
        ver_tree = docs_tree or src_tree
        ndoc = sum(1 for s, _ in entries.values() if s in ("", "deprecated"))
        hdr = ["NCCL environment variables",
               "source: NCCL user guide, Environment Variables page "
               "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html), from its source file "
               f"{docs_where or '(not given)'} in https://github.com/NVIDIA/nccl"]
        if ver_tree:
            hdr.append("version: " + ver_tree.provenance(nccl_version(ver_tree)))
        if src_tree:
            hdr.append("also: variables read by NCCL's own source (NCCL_PARAM, DEFINE_NCCL_PARAM, ncclGetEnv, getenv,")
            hdr.append("  ncclGetLevel in src/ and plugins/) of " + src_tree.provenance(nccl_version(src_tree)))
        hdr.append(f"also: NCCL_* variables PyTorch reads itself: {PYTORCH_SOURCE}")
        hdr += common + [
            "format: NAME[<TAB>STATUS[<TAB>NOTE]], sorted. No STATUS = documented and current.",
            "  deprecated   = documented as deprecated or removed (NOTE says which, since when)",
            "  undocumented = not in the user guide, but NCCL's source reads it (real, unsupported)",
            "  pytorch      = not NCCL's: PyTorch's ProcessGroupNCCL reads it (deprecated TORCH_NCCL_* alias)",
            f"counts: {ndoc} documented (incl. deprecated), "
            f"{sum(1 for s, _ in entries.values() if s == 'undocumented')} undocumented, "
            f"{sum(1 for s, _ in entries.values() if s == 'pytorch')} pytorch",
        ]
        write_file(os.path.join(args.out, "nccl_env.txt"), hdr, body)

    # ---- HCCL ---------------------------------------------------------------
    if args.hccl:
        ht = Tree(args.hccl)
        doc = hccl_docs(ht)
        if not doc:
            raise SchemaError(f"{args.hccl}: no variable pages under {' or '.join(HCCL_DOC_DIRS)}")
        src = hccl_source(ht)
        entries = {n: ("", "") for n in doc}
        for n, rel in sorted(src.items()):
            if n not in entries:
                entries[n] = ("undocumented", f"read by hicann/hccl source ({rel})")
        for n, (st, note) in HCCL_EXTRA.items():
            if n not in entries:
                entries[n] = (st, note)
        body = []
        for n in sorted(entries):
            st, note = entries[n]
            body.append(n if not st else "\t".join([n, st] + ([note] if note else [])))
        hdr = [
            "Huawei Ascend HCCL environment variables",
            "source: the HCCL environment-variable reference in https://github.com/hicann/hccl",
            f"  ({' and '.join(sorted({posixpath.dirname(v) for v in doc.values()}))}: one page per variable,",
            "  the pages of the CANN 'HCCL user guide > Environment Variables' on hiascend.com),",
            "  and the variables its src/ reads with a *GetEnv*(\"HCCL_...\") call",
            "version: " + ht.provenance("hicann/hccl"),
            "also: curated from Huawei documentation (see NOTE column): older CANN env references and",
            "  torch_npu's own HCCL_* variables",
        ] + common + [
            "format: NAME[<TAB>STATUS[<TAB>NOTE]], sorted. No STATUS = documented in hicann/hccl's reference.",
            "  undocumented = read by hicann/hccl src/ but without a reference page",
            "  cann-doc     = documented in an older CANN release's env reference (may be obsolete)",
            "  torch_npu    = read by torch_npu (Ascend's PyTorch adapter), not by HCCL",
            "completeness: HCCL's own current reference is complete here; the rest is best effort.",
            "  hcomm (HCCL's communication base, not in this snapshot), the CANN runtime, torch_npu,",
            "  MindSpeed and older CANN releases may read HCCL_* names that are not listed.",
            f"counts: {len(doc)} documented, {sum(1 for s, _ in entries.values() if s == 'undocumented')} undocumented, "
            f"{sum(1 for s, _ in entries.values() if s == 'cann-doc')} cann-doc, "
            f"{sum(1 for s, _ in entries.values() if s == 'torch_npu')} torch_npu",
        ]
        write_file(os.path.join(args.out, "hccl_env.txt"), hdr, body)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SchemaError as e:
        sys.exit(f"refresh-schema.py: {e}")
