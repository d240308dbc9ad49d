#!/usr/bin/env python3
"""Checks that the workspace's file import graph has no circle, and that no library crate
depends on a front end or on the experiments crate.

The file graph: within each crate (every target under src/ reached from lib.rs, main.rs or
src/bin/*.rs through `mod` declarations), file A imports file B when A names an item that B
defines: through `use` (crate::, super::, self:: or a name in scope), through a qualified path
in code (`crate::a::B`, `super::B`, `child::B`, `alias::B`), or through a glob `use m::*` and a
name of m that A uses. A name re-exported by `use` (a mod.rs `pub use`) is followed to the file
that defines it. Declaring a module (`mod a;`) and re-exporting a name the file itself does not
use are no imports. Nor is a file's use of the files of the modules that contain it (what it
sees through `super::`): a module split into its file and its submodules' files (`engine.rs`
and `engine/*.rs`, each adding to one type) is one room, as in the language; `--strict` counts
those arrows too. Test code is left out: `#[cfg(test)]` items and modules, tests/, benches/.
A circle (files that import each other in a loop, a strongly connected component of more than
one file) fails the check, listing the names that tie each arrow. In a crate whose floors FLOORS
declares (crates/core), an arrow from a file to a file of a higher floor fails it too, and so
does a top-level module on no floor.

The crate graph: no crate under crates/ may name a crate under frontends/, nor crates/lab (the
experiments, above every other crate under crates/), among its [dependencies],
[dev-dependencies] or [build-dependencies].

Usage: scripts/check-imports.py [--self-test] [--strict] [PATH...]
  PATH         crate folders (or folders holding crates) to check; default: the workspace members
  --self-test  first prove the check can fail: small trees with a circle of files (through a
               re-export, a glob import, a part using its parent under --strict), an arrow up the
               floors, and a library crate depending on a front end must each fail it; a sound
               one must pass
  --strict     count a file's use of the files of its enclosing modules as arrows too

Python 3 standard library only. Exit status: 0 when every check passes, 1 when any fails,
2 on bad usage.
"""

import os
import re
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Comments, string and character literals (dropped), then the tokens that matter.
TOKEN = re.compile(
    r"""
    (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<raw_string>b?r(?P<hashes>\#*)")
  | (?P<string>b?"(?:[^"\\]|\\.)*")
  | (?P<char>b?'(?:[^'\\\n]|\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.))')
  | (?P<lifetime>'[A-Za-z_]\w*)
  | (?P<ident>r\#[A-Za-z_]\w*|[A-Za-z_]\w*)
  | (?P<number>\d[\w.]*)
  | (?P<path_sep>::)
  | (?P<punct>[^\s\w])
  | (?P<space>\s+)
    """,
    re.VERBOSE | re.DOTALL,
)

# The floors of a library crate's top-level modules, bottom-up ("" is lib.rs), as
# docs/architecture.md draws them ("Crates and floors"): a file imports only from files of its
# own floor or below. A crate not named here is checked for circles alone.
FLOORS = {
    "crates/core": [
        ["units", "error", "progress"],
        ["device"],
        ["metrics"],
        ["ftl"],
        ["host"],
        ["workload"],
        ["timing"],
        ["config"],
        ["sim"],
        ["experiments", ""],
    ],
}
FIXTURE_FLOORS = {"crates/tiny": [["error"], ["device"], ["config"], [""]]}

ITEM_KEYWORDS = {"struct", "enum", "union", "trait", "fn", "type", "const", "static"}
NOT_PATH_STARTS = {"Self"}


def tokenize(text):
    """The file's identifiers, `::` and punctuation, without comments and literals."""
    tokens = []
    position = 0
    length = len(text)
    while position < length:
        match = TOKEN.match(text, position)
        if match is None:
            position += 1
            continue
        kind = match.lastgroup
        if kind == "hashes":
            kind = "raw_string"
        if kind == "block_comment":
            position = skip_block_comment(text, match.end())
            continue
        if kind == "raw_string":
            closing = '"' + match.group("hashes")
            end = text.find(closing, match.end())
            position = length if end < 0 else end + len(closing)
            continue
        position = match.end()
        if kind in ("ident", "path_sep", "punct"):
            value = match.group()
            tokens.append(value.removeprefix("r#"))
    return tokens


def skip_block_comment(text, position):
    """The position after a (nested) block comment whose `/*` ends at `position`."""
    depth = 1
    while depth and position < len(text):
        if text.startswith("/*", position):
            depth += 1
            position += 2
        elif text.startswith("*/", position):
            depth -= 1
            position += 2
        else:
            position += 1
    return position


class ParsedFile:
    """What one source file declares and names; `scope` is a module path inside the file
    (an inline `mod a { … }` adds `a`), the empty tuple for the file's own module."""

    def __init__(self):
        self.modules = []  # (scope, name, inline, whether a #[path] names its file)
        self.items = {}  # scope -> set of names defined there
        self.uses = []  # (scope, path segments, alias; "*" for a glob)
        self.paths = []  # (scope, path segments) named in code
        self.identifiers = set()  # every identifier in code outside `use` declarations


def parse(tokens):
    parsed = ParsedFile()
    scopes = [("module", ())]  # ("module", scope) or ("block", scope of its module)
    pending_module = None  # the scope of an inline `mod NAME {` whose brace comes next
    path_attribute = None
    index = 0
    count = len(tokens)
    while index < count:
        token = tokens[index]
        kind, scope = scopes[-1]
        if token == "#" and index + 1 < count and tokens[index + 1] in ("[", "!"):
            start = index + 2 if tokens[index + 1] == "[" else index + 3
            end = matching(tokens, start - 1)
            attribute = tokens[start:end]
            if tokens[index + 1] == "[" and is_test_only(attribute):
                index = skip_item(tokens, end + 1)
                continue
            if attribute[:2] == ["path", "="]:
                # The tokens hold no string literals: Crate.load reads the path from the text.
                path_attribute = True
            index = end + 1
            continue
        if token == "use":
            end = index + 1
            while end < count and tokens[end] != ";":
                end += 1
            for segments, alias in use_tree(tokens[index + 1 : end]):
                parsed.uses.append((scope, segments, alias))
            index = end + 1
            continue
        if token == "mod" and kind == "module" and index + 2 < count and tokens[index + 2] in (";", "{"):
            name = tokens[index + 1]
            inline = tokens[index + 2] == "{"
            parsed.modules.append((scope, name, inline, path_attribute))
            parsed.items.setdefault(scope, set())
            path_attribute = None
            if inline:
                pending_module = scope + (name,)
            index += 2
            continue
        if token in ITEM_KEYWORDS and kind == "module" and index + 1 < count:
            following = tokens[index + 1]
            if re.fullmatch(r"[A-Za-z_]\w*", following) and following not in ITEM_KEYWORDS:
                parsed.items.setdefault(scope, set()).add(following)
        if token == "{":
            if pending_module is not None:
                scopes.append(("module", pending_module))
                pending_module = None
            else:
                scopes.append(("block", scope))
        elif token == "}":
            if len(scopes) > 1:
                scopes.pop()
        elif token == "macro_rules" and index + 2 < count:
            index += 3  # the macro's name is no path
            continue
        elif re.fullmatch(r"[A-Za-z_]\w*", token):
            parsed.identifiers.add(token)
            if (
                index + 2 < count
                and tokens[index + 1] == "::"
                and (index == 0 or tokens[index - 1] != "::")
                and token not in NOT_PATH_STARTS
            ):
                end = index
                while end + 2 < count and tokens[end + 1] == "::" and re.fullmatch(r"[A-Za-z_]\w*", tokens[end + 2]):
                    end += 2
                segments = tokens[index : end + 1 : 2]
                if len(segments) > 1:
                    parsed.paths.append((scope, segments))
        index += 1
    return parsed


def matching(tokens, opening):
    """The index of the bracket closing the one at `opening`."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for index in range(opening, len(tokens)):
        if tokens[index] in pairs:
            depth += 1
        elif tokens[index] in pairs.values():
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def is_test_only(attribute):
    """`cfg(test)`, or `cfg(all(test, …))`: the item is compiled for tests alone."""
    text = "".join(attribute)
    return text == "cfg(test)" or text.startswith("cfg(all(test,")


def skip_item(tokens, index):
    """The index after the item starting at `index` (its other attributes included): up to a
    `;` outside brackets, or the `}` closing its first brace."""
    depth = 0
    while index < len(tokens):
        token = tokens[index]
        if token in ("(", "["):
            depth += 1
        elif token in (")", "]"):
            depth -= 1
        elif token == ";" and depth == 0:
            return index + 1
        elif token == "{" and depth == 0:
            return matching(tokens, index) + 1
        index += 1
    return index


def use_tree(tokens, prefix=()):
    """The (path, alias) pairs of a `use` tree; the alias is "*" for a glob."""
    pairs = []
    segments = list(prefix)
    index = 0
    if tokens[:1] == ["::"]:
        index = 1
    while index < len(tokens):
        token = tokens[index]
        if token == "{":
            end = matching(tokens, index)
            for part in split_top_level(tokens[index + 1 : end]):
                pairs.extend(use_tree(part, tuple(segments)))
            return pairs
        if token == "*":
            pairs.append((tuple(segments), "*"))
            return pairs
        if token == "as":
            alias = tokens[index + 1] if index + 1 < len(tokens) else "_"
            pairs.append(finish_use(segments, alias))
            return pairs
        if token != "::":
            segments.append(token)
        index += 1
    if segments:
        pairs.append(finish_use(segments, None))
    return pairs


def finish_use(segments, alias):
    """`a::b::self` imports `a::b` as `b`."""
    if segments and segments[-1] == "self":
        segments = segments[:-1]
    return tuple(segments), alias if alias is not None else (segments[-1] if segments else "_")


def split_top_level(tokens):
    parts, current, depth = [], [], 0
    for token in tokens:
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
        if token == "," and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(token)
    if current:
        parts.append(current)
    return [part for part in parts if part]


PATH_ATTRIBUTE = re.compile(r'#\[\s*path\s*=\s*"([^"]+)"\s*\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)')


class Crate:
    """One target's module tree: module path -> (file, scope inside the file)."""

    def __init__(self, root_file):
        self.modules = {}
        self.files = {}  # file -> ParsedFile
        self.children = {}  # module path -> {name: module path}
        self.load(root_file, (), is_directory_owner=True)

    def load(self, path, module, is_directory_owner):
        if path in self.files or not os.path.isfile(path):
            return
        with open(path, encoding="utf-8") as source:
            text = source.read()
        parsed = parse(tokenize(text))
        self.files[path] = parsed
        path_attributes = {name: target for target, name in PATH_ATTRIBUTE.findall(text)}
        self.modules[module] = (path, ())
        self.children.setdefault(module, {})
        directory = os.path.dirname(path)
        if not is_directory_owner:
            directory = os.path.join(directory, os.path.splitext(os.path.basename(path))[0])
        for scope, name, inline, has_path in parsed.modules:
            parent = module + scope
            child = parent + (name,)
            self.children.setdefault(parent, {})[name] = child
            if inline:
                self.modules[child] = (path, scope + (name,))
                self.children.setdefault(child, {})
                continue
            if has_path and name in path_attributes:
                self.load(os.path.normpath(os.path.join(os.path.dirname(path), path_attributes[name])), child, True)
                continue
            base = os.path.join(directory, *scope)
            flat = os.path.join(base, name + ".rs")
            if os.path.isfile(flat):
                self.load(flat, child, False)
            else:
                self.load(os.path.join(base, name, "mod.rs"), child, True)

    def lookup(self, module, name, visiting):
        """What `name` means in `module`: ("module", path), ("item", file, name) or None."""
        key = (module, name)
        if key in visiting or module not in self.modules:
            return None
        visiting = visiting | {key}
        child = self.children.get(module, {}).get(name)
        if child is not None:
            return ("module", child)
        path, scope = self.modules[module]
        parsed = self.files[path]
        if name in parsed.items.get(scope, ()):
            return ("item", path, name)
        for use_scope, segments, alias in parsed.uses:
            if use_scope == scope and alias == name:
                found = self.resolve(module, segments, visiting)
                if found is not None:
                    return found
        for use_scope, segments, alias in parsed.uses:
            if use_scope == scope and alias == "*":
                found = self.resolve(module, segments, visiting)
                if found is not None and found[0] == "module":
                    inner = self.lookup(found[1], name, visiting)
                    if inner is not None:
                        return inner
        return None

    def resolve(self, module, segments, visiting=frozenset()):
        """What a path named in `module` means (a path into another crate: None)."""
        if not segments:
            return ("module", module)
        first, rest = segments[0], list(segments[1:])
        if first == "crate":
            current = ()
        elif first == "self":
            current = module
        elif first == "super":
            current = module[:-1]
            while rest and rest[0] == "super":
                current = current[:-1]
                rest.pop(0)
        else:
            current = None
            rest = list(segments)
        found = ("module", current) if current is not None else None
        for segment in rest:
            scope = current if current is not None else module
            found = self.lookup(scope, segment, visiting)
            if found is None or found[0] == "item":
                # An item ends the walk: what follows (a variant, an associated name) is in its file.
                return found
            current = found[1]
        return found

    def edges(self, strict):
        """file -> {file: set of names it takes from there}. Unless `strict`, a file's use of
        its ancestors' files (the modules that declare it, whose names it sees by `super::`)
        is no arrow: a module split into a file and its submodules' files is one room."""
        owner = {}
        for module, (path, scope) in self.modules.items():
            owner[(path, scope)] = module
        graph = {path: {} for path in self.files}
        for path, parsed in self.files.items():
            module = owner[(path, ())]
            ancestors = set() if strict else {self.modules[module[:depth]][0] for depth in range(len(module))}

            def add(found, source=path, ancestors=ancestors):
                if found is not None and found[0] == "item" and found[1] != source and found[1] not in ancestors:
                    graph[source].setdefault(found[1], set()).add(found[2])

            for scope, segments, alias in parsed.uses:
                module = owner.get((path, scope))
                if module is None:
                    continue
                if alias == "*":
                    target = self.resolve(module, segments)
                    if target is not None and target[0] == "module":
                        for name in parsed.identifiers:
                            add(self.lookup(target[1], name, frozenset()))
                elif alias in parsed.identifiers:
                    add(self.resolve(module, segments))
            for scope, segments in parsed.paths:
                module = owner.get((path, scope))
                if module is not None:
                    add(self.resolve(module, segments))
        return graph


def circles(graph):
    """The strongly connected components of more than one file (Tarjan, iterative)."""
    index_of, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index_of:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index_of[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in graph:
                    continue
                if successor not in index_of:
                    index_of[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index_of[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index_of[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def crate_roots(crate_dir):
    source = os.path.join(crate_dir, "src")
    roots = [os.path.join(source, name) for name in ("lib.rs", "main.rs")]
    binaries = os.path.join(source, "bin")
    if os.path.isdir(binaries):
        for name in sorted(os.listdir(binaries)):
            if name.endswith(".rs"):
                roots.append(os.path.join(binaries, name))
            elif os.path.isfile(os.path.join(binaries, name, "main.rs")):
                roots.append(os.path.join(binaries, name, "main.rs"))
    return [root for root in roots if os.path.isfile(root)]


def check_files(root, crate_dir, strict, floors):
    """The circles of one crate's files, and its arrows that run up its floors, as lines of text."""
    problems = []
    for crate_root in crate_roots(crate_dir):
        crate = Crate(crate_root)
        graph = crate.edges(strict)
        crate_floors = floors.get(os.path.relpath(crate_dir, root).replace(os.sep, "/"))
        if crate_floors is not None and os.path.basename(crate_root) == "lib.rs":
            problems.extend(arrows_up(root, crate, graph, crate_floors))
        for component in circles(graph):
            members = set(component)
            relative = [os.path.relpath(path, root) for path in component]
            problems.append(f"circle of {len(component)} files: {', '.join(relative)}")
            for source in component:
                for target in sorted(set(graph[source]) & members):
                    names = ", ".join(sorted(graph[source][target]))
                    problems.append(f"  {os.path.relpath(source, root)} -> {os.path.relpath(target, root)}: {names}")
    return problems


def arrows_up(root, crate, graph, floors):
    """Arrows from a file to a file of a top-level module on a higher floor, and files of a
    top-level module on no floor."""
    floor_of = {module: level for level, modules in enumerate(floors) for module in modules}
    top = {path: module[0] if module else "" for module, (path, scope) in crate.modules.items() if not scope}
    problems = []
    for path in sorted(graph):
        if top[path] not in floor_of:
            problems.append(
                f"{os.path.relpath(path, root)}: module `{top[path]}` stands on no floor "
                "(add it to FLOORS in scripts/check-imports.py and to docs/architecture.md)"
            )
            continue
        for target, names in sorted(graph[path].items()):
            if floor_of.get(top[target], -1) > floor_of[top[path]]:
                problems.append(
                    f"arrow up: {os.path.relpath(path, root)} (floor {floor_of[top[path]] + 1}) -> "
                    f"{os.path.relpath(target, root)} (floor {floor_of[top[target]] + 1}): {', '.join(sorted(names))}"
                )
    return problems


def check_crate_dependencies(root, crate_dir):
    """A crate under crates/ naming a front end, or crates/lab unless it is crates/lab (the
    experiments, above every other crate under crates/; a crate may name itself, as a dev
    dependency with test features)."""
    relative = os.path.relpath(crate_dir, root)
    if relative.split(os.sep)[0] != "crates":
        return []
    manifest = os.path.join(crate_dir, "Cargo.toml")
    with open(manifest, "rb") as source:
        document = tomllib.load(source)
    tables = [document]
    tables.extend(document.get("target", {}).values())
    problems = []
    for table in tables:
        for section in ("dependencies", "dev-dependencies", "build-dependencies"):
            for name, spec in table.get(section, {}).items():
                if not isinstance(spec, dict) or "path" not in spec:
                    continue
                target = os.path.relpath(os.path.normpath(os.path.join(crate_dir, spec["path"])), root)
                if target == relative:
                    continue
                if target.split(os.sep)[0] == "frontends" or target == os.path.join("crates", "lab"):
                    problems.append(
                        f"{os.path.relpath(manifest, root)}: [{section}] {name} = {target}: "
                        "a crate under crates/ may not depend on a front end, nor on the experiments (crates/lab)"
                    )
    return problems


def workspace_crates(root):
    with open(os.path.join(root, "Cargo.toml"), "rb") as source:
        members = tomllib.load(source).get("workspace", {}).get("members", [])
    return [os.path.join(root, member) for member in members]


def crates_under(root, paths):
    """The crate folders the given paths name (a crate, or a folder of crates)."""
    found = []
    for path in paths:
        path = os.path.normpath(os.path.join(root, path))
        if os.path.isfile(os.path.join(path, "Cargo.toml")):
            found.append(path)
        elif os.path.isdir(path):
            found.extend(
                os.path.join(path, name)
                for name in sorted(os.listdir(path))
                if os.path.isfile(os.path.join(path, name, "Cargo.toml"))
            )
        else:
            raise SystemExit(f"check-imports: {path} is no crate nor a folder of crates")
    return found


def check(root, crate_dirs, strict=False, floors=None):
    problems = []
    for crate_dir in crate_dirs:
        problems.extend(check_files(root, crate_dir, strict, FLOORS if floors is None else floors))
        problems.extend(check_crate_dependencies(root, crate_dir))
    return problems


FIXTURE_FILES = {
    "Cargo.toml": '[workspace]\nmembers = ["crates/tiny", "frontends/cli"]\n',
    "crates/tiny/Cargo.toml": '[package]\nname = "tiny"\n[dependencies]\n',
    "crates/tiny/src/lib.rs": (
        "//! A fixture crate.\npub mod error;\npub mod device;\npub mod config;\npub use config::Config;\n"
    ),
    "crates/tiny/src/error.rs": "//! Errors.\npub struct ConfigError;\n",
    "crates/tiny/src/config/mod.rs": (
        "//! Configuration.\nmod sizes;\npub use sizes::Size;\n"
        "use crate::device::DeviceConfig;\npub struct Config { pub device: DeviceConfig, pub size: Size }\n"
    ),
    "crates/tiny/src/config/sizes.rs": (
        "//! Sizes.\npub struct Size;\nimpl Size { fn fits(&self, _: &super::Config) {} }\n"
    ),
    "crates/tiny/src/device/mod.rs": (
        "//! The device.\n// crate::config::Config in a comment is no import.\n"
        'const NOTE: &str = "crate::config::Config in a string neither";\n'
        "pub struct DeviceConfig { pub error: Option<crate::error::ConfigError> }\n"
        "#[cfg(test)]\nmod tests {\n    use crate::config::Config;\n}\n"
    ),
    "frontends/cli/Cargo.toml": '[package]\nname = "cli"\n[dependencies]\ntiny = { path = "../../crates/tiny" }\n',
    "frontends/cli/src/main.rs": "//! A front end.\nfn main() {}\n",
}

# (what is broken, the files changed, whether --strict, lines the failure must hold; none: it passes)
SELF_TEST_CASES = [
    ("nothing (comments, strings, test code and a part using its parent are no circle)", {}, False, []),
    (
        "a part using its parent, under --strict",
        {},
        True,
        ["crates/tiny/src/config/sizes.rs -> crates/tiny/src/config/mod.rs: Config"],
    ),
    (
        "the device naming a configuration type, through a re-export",
        {
            "crates/tiny/src/device/mod.rs": (
                "//! The device.\npub struct DeviceConfig { pub size: crate::config::Size }\n"
            ),
            "crates/tiny/src/config/sizes.rs": (
                "//! Sizes.\nuse crate::device::DeviceConfig;\npub struct Size(Option<Box<DeviceConfig>>);\n"
            ),
        },
        False,
        [
            "circle of 2 files",
            "crates/tiny/src/device/mod.rs -> crates/tiny/src/config/sizes.rs: Size",
            "crates/tiny/src/config/sizes.rs -> crates/tiny/src/device/mod.rs: DeviceConfig",
        ],
    ),
    (
        "the device naming the configuration above it (no circle, an arrow up)",
        {
            "crates/tiny/src/device/mod.rs": (
                "//! The device.\npub struct DeviceConfig { pub size: crate::config::Size }\n"
            )
        },
        False,
        ["arrow up: crates/tiny/src/device/mod.rs (floor 2) -> crates/tiny/src/config/sizes.rs (floor 3): Size"],
    ),
    (
        "an error type taking a device type through a glob import",
        {
            "crates/tiny/src/error.rs": (
                "//! Errors.\nuse super::device::*;\npub struct ConfigError(Box<DeviceConfig>);\n"
            )
        },
        False,
        ["circle of 2 files", "crates/tiny/src/error.rs -> crates/tiny/src/device/mod.rs: DeviceConfig"],
    ),
    (
        "a library crate depending on a front end",
        {
            "crates/tiny/Cargo.toml": (
                '[package]\nname = "tiny"\n[dev-dependencies]\ncli = { path = "../../frontends/cli" }\n'
            )
        },
        False,
        ["crates/tiny/Cargo.toml: [dev-dependencies] cli = frontends/cli"],
    ),
]


def self_test():
    """The check passes a sound tree and fails each broken one, naming what broke it."""
    failed = 0
    for description, changes, strict, expected in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory() as directory:
            for relative, text in {**FIXTURE_FILES, **changes}.items():
                path = os.path.join(directory, relative)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as target:
                    target.write(text)
            problems = check(directory, workspace_crates(directory), strict, FIXTURE_FLOORS)
        text = "\n".join(problems)
        missing = [line for line in expected if line not in text]
        if missing or bool(problems) != bool(expected):
            failed += 1
            print(f"check-imports self-test: {description}: expected {expected or 'no problem'}, got:", file=sys.stderr)
            print(text or "(no problem)", file=sys.stderr)
    if failed:
        return False
    print(f"check-imports self-test: {len(SELF_TEST_CASES) - 1} broken trees failed the check, the sound one passed")
    return True


def main(arguments):
    options = {"--self-test", "--strict"}
    paths = [argument for argument in arguments if argument not in options]
    unknown = [path for path in paths if path.startswith("-")]
    if unknown:
        print(
            f"check-imports: unknown option {unknown[0]} (want --self-test, --strict, crate folders)", file=sys.stderr
        )
        return 2
    if "--self-test" in arguments and not self_test():
        return 1
    crate_dirs = crates_under(ROOT, paths) if paths else workspace_crates(ROOT)
    problems = check(ROOT, crate_dirs, "--strict" in arguments)
    for line in problems:
        print(line)
    if problems:
        failures = sum(not line.startswith(" ") for line in problems)
        print(f"check-imports: {failures} problems (scripts/check-imports.py explains the rules)", file=sys.stderr)
        return 1
    print(
        f"check-imports: no circle among the files of {len(crate_dirs)} crates, no arrow up their floors, "
        "and no library crate depends on a front end or on crates/lab"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
