#!/usr/bin/env python3
"""Checks every figure quoted in README.md and docs/*.md against its results file.

The rules (what a figure is, the marker grammar, what is exempt and why) are
written once in docs/reporting.md, "Claims as code"; this script applies them.
Python 3 standard library only, so that it runs first in scripts/test.sh.

Exit status: 0 when every check passes, 1 when any fails (each failure names
its file and line), 2 on bad usage.
"""

import argparse
import functools
import glob
import hashlib
import json
import math
import os
import re
import sys
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "docs/results/claims-baseline.json"

# Fenced blocks in these languages are code (commands, configuration, source):
# their numerals are inputs, not figures. Any other fence (none, `text`,
# `console`) is command output, whose figures are claims like prose.
CODE_LANGUAGES = {"sh", "bash", "shell", "rust", "toml", "python", "json", "ini", "c", "yaml"}
# A whole-line comment in a shell block is prose, often the command's output
# shown beneath it (`#   42,348 IOPS`): its figures are claims too.
SHELL_LANGUAGES = {"sh", "bash", "shell"}

# Units that make an integer a figure: times, rates and counts in thousands or
# millions. Integer sizes (KiB, MiB, GiB, pages, blocks) are not among them:
# in these docs they name a set-up (page size, file size, device size); a
# measured size is quoted with a decimal point or carries a claim marker.
FIGURE_UNITS = r"(?:ns|us|µs|ms|s|sec|min|h|k|M|G|IOPS|MB/s|MiB/s|GB/s|GiB/s|pp|points)"
NUMERAL = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?P<mult>x(?![\w])|×)?(?![\w])"
)
# A unit after the numeral, or after the other end of a range ("39-42 %").
AFTER_UNIT = re.compile(r"(?:\s?[-–]\s?\d[\d.,]*)?(?:x(?![\w])|×|\s?(?:%|" + FIGURE_UNITS + r"(?![\w])))")
# Numerals that are names, not figures: section, figure, table, equation,
# slide, algorithm, issue and step numbers (a numeral with a unit is a figure
# whatever precedes it).
NAME_BEFORE = re.compile(
    r"(?:§|Section|Sections|section|sections|Figure|Figures|Fig\.|Figs\.|Table|Tables|eq\.|eqs\.|Eq\.|equation|"
    r"slide|slides|Algorithm|issue|step|Step|Chapter|Appendix|lines?|Lemma|Theorem)\s*\(?$"
)
# Text that is never a figure, masked before numerals are read: dates, clock
# times, version numbers (x.y.z), inline code spans, link targets, and markers.
MASKS = [
    re.compile(r"`[^`]*`"),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"<!--.*?-->"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?"),
    re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"),
    re.compile(r"\bv?\d+\.\d+\.\d+\b"),
    re.compile(r"https?://\S+"),
]
MARKER = re.compile(r"<!--\s*(claim-begin|claim-end|claim|exempt-begin|exempt-end|exempt)(?![\w-]):?\s*(.*?)\s*-->")
# A repository path named in the docs: it must exist (a glob must match).
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:crates|frontends|scripts|docs|examples|fuzz|\.ci)/[\w.*/{}-]*[\w*}])"
)


class Figure:
    """One numeral of a doc line: its value, its column and whether it is a figure."""

    def __init__(self, text, start, end, is_figure, negative=False):
        self.text = text
        self.start = start
        self.end = end
        self.is_figure = is_figure
        self.value = float(text.replace(",", ""))
        # A minus sign glued to the numeral ("−9.8 %", not the dash of a
        # range "39-42 %"): block claims compare the signed value.
        self.signed = -self.value if negative else self.value
        self.covered = False

    def decimals(self):
        """The places the figure is quoted to: its rounding in a block claim."""
        return len(self.text.partition(".")[2])


def mask(line):
    """The line with never-a-figure text replaced by spaces (columns kept)."""
    for pattern in MASKS:
        line = pattern.sub(lambda m: " " * len(m.group(0)), line)
    return line


def numerals(line):
    """Every numeral of the line, each marked whether it counts as a figure."""
    return [Figure(*numeral) for numeral in read_numerals(line)]


# The self-test checks each doc again for every figure it changes, so the same lines are read
# thousands of times: what a line holds is read once (a function of the line's text alone).
@functools.lru_cache(maxsize=None)
def read_numerals(line):
    """(text, start, end, is_figure, negative) of every numeral of the line."""
    masked = mask(line)
    found = []
    for match in NUMERAL.finditer(masked):
        text = match.group("num")
        before = masked[: match.start()]
        named = NAME_BEFORE.search(before.rstrip()) is not None and before.endswith((" ", "("))
        after = masked[match.end() :]
        with_unit = match.group("mult") is not None or AFTER_UNIT.match(after) is not None
        is_figure = with_unit or (("." in text or "," in text) and not named)
        negative = re.search(r"(?:^|[^\w.,])[−-]$", before) is not None
        found.append((text, match.start(), match.end("num"), is_figure, negative))
    return tuple(found)


def parse_fields(body):
    """`claim:` body → (sources, options): `FILE#POINTER #POINTER … round=N scale=S`."""
    sources, options = [], {}
    current_file = None
    for word in body.split():
        if "=" in word and "#" not in word:
            key, value = word.split("=", 1)
            options[key] = value
        elif word.startswith("#"):
            if current_file is None:
                raise ValueError(f"pointer {word} names no file")
            sources.append((current_file, word[1:]))
        else:
            path, _, pointer = word.partition("#")
            current_file = path
            sources.append((path, pointer))
    return sources, options


class ResultsFiles:
    """Results files read once each: JSON documents and CSV tables."""

    def __init__(self, root):
        self.root = root
        self.cache = {}
        # The self-test reads the same pointers once per changed figure.
        self.values = {}

    def load(self, path):
        if path not in self.cache:
            full = os.path.join(self.root, path)
            if not os.path.isfile(full):
                raise LookupError(f"results file {path} does not exist")
            with open(full, encoding="utf-8") as handle:
                if path.endswith(".json"):
                    self.cache[path] = json.load(handle)
                elif path.endswith(".csv"):
                    import csv

                    self.cache[path] = list(csv.DictReader(handle))
                else:
                    raise LookupError(f"results file {path} is neither JSON nor CSV")
        return self.cache[path]

    def value(self, path, pointer):
        """The number at `pointer`: a JSON pointer (/a/0/b) or, in a CSV, ROW/COLUMN
        where ROW is a row index or KEY=VALUE (the first row whose KEY is VALUE)."""
        if (path, pointer) not in self.values:
            self.values[path, pointer] = self.read_value(path, pointer)
        return self.values[path, pointer]

    def read_value(self, path, pointer):
        document = self.load(path)
        parts = pointer_parts(pointer)
        if path.endswith(".csv"):
            if len(parts) != 2:
                raise LookupError(f"{path}#{pointer}: a CSV pointer is /ROW/COLUMN")
            row_key, column = parts
            if "=" in row_key:
                key, wanted = row_key.split("=", 1)
                rows = [row for row in document if row.get(key) == wanted]
            else:
                rows = document[int(row_key) : int(row_key) + 1] if row_key.isdigit() else []
            if not rows or column not in rows[0]:
                raise LookupError(f"{path}#{pointer}: no such row or column")
            value = rows[0][column]
        else:
            value = walk(document, parts, path, pointer)
        return number(path, pointer, value)

    def numbers(self, path, pointer):
        """The list at `pointer` (JSON), flattened row by row, as numbers."""
        document = self.load(path)
        if not path.endswith(".json"):
            raise LookupError(f"{path}: a claim block names a list in a JSON file")
        value = walk(document, pointer_parts(pointer), path, pointer)
        if not isinstance(value, list):
            raise LookupError(f"{path}#{pointer}: not a list")

        def flat(items):
            for item in items:
                yield from flat(item) if isinstance(item, list) else [number(path, pointer, item)]

        return list(flat(value))


def pointer_parts(pointer):
    """A JSON pointer's segments, unescaped (`%20` for a space, `~1` for `/`)."""
    return [unquote(p).replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def walk(document, parts, path, pointer):
    """The value at `parts` in a JSON document; a missing field fails naming it."""
    value = document
    for part in parts:
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise LookupError(f"{path}#{pointer}: no field {part!r}")
    return value


def number(path, pointer, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise LookupError(f"{path}#{pointer}: {value!r} is not a number") from None


def agrees(quoted, source, decimals, scale):
    """True when `quoted` is `source × scale` rounded to `decimals` places
    (half a unit of the last quoted place either way, plus float noise)."""
    expected = source * scale
    tolerance = 0.5 * 10.0 ** (-decimals) * (1 + 1e-9) + 1e-12 * abs(expected)
    return math.isfinite(expected) and abs(quoted - expected) <= tolerance


def check_file(path, results, problems, unmarked, text=None, checked=None, fixes=None, collect=None):
    """Checks one markdown file (or `text` in its place); appends `file:line:
    message` problems and unmarked figures (`file:line: figure`); `checked`
    collects (line index, start, end) of every figure a claim marker checks;
    `fixes` collects (line index, start, end, text) for every figure that
    disagrees: its source's value, rounded and written as the figure was."""
    in_fence, fence_lang, exempt_reason, block = False, "", None, None
    if text is None:
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            text = handle.read()
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        check_paths(path, where, line, problems)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            fence_lang = stripped[3:].strip().split(" ")[0].lower() if in_fence else ""
            continue
        if in_fence and fence_lang in CODE_LANGUAGES:
            if not (fence_lang in SHELL_LANGUAGES and stripped.startswith("#") and not stripped.startswith("#!")):
                continue
        found = [] if in_fence and "<!--" in line else numerals(line)
        # Markers in inline code are examples, not markers.
        markers = list(MARKER.finditer(MASKS[0].sub(lambda m: " " * len(m.group(0)), line))) if not in_fence else []
        block_figures_start = len(found) if block is None else 0
        for marker in markers:
            kind, body = marker.group(1), marker.group(2)
            if kind == "claim-begin":
                if block is not None:
                    problems.append(f"{where}: claim-begin inside the claim block of line {block.line}")
                block = ClaimBlock.open(where, number, body, results, problems)
                block_figures_start = len(found)
            elif kind == "claim-end":
                if block is None:
                    problems.append(f"{where}: claim-end without claim-begin")
                else:
                    block.close(where, problems)
                block, block_figures_start = None, len(found)
            elif kind == "exempt-begin":
                if not body:
                    problems.append(f"{where}: exempt-begin without a reason")
                exempt_reason = body or "?"
            elif kind == "exempt-end":
                if exempt_reason is None:
                    problems.append(f"{where}: exempt-end without exempt-begin")
                exempt_reason = None
            elif kind == "exempt":
                if not body:
                    problems.append(f"{where}: exempt without a reason")
                for figure in found:
                    if figure.end <= marker.start() and not figure.covered:
                        figure.covered = True
            else:
                for figure, fixed in check_claim(where, line, marker, found, results, problems):
                    if checked is not None:
                        checked.append((number - 1, figure.start, figure.end))
                    if fixes is not None and fixed is not None:
                        fixes.append((number - 1, figure.start, figure.end, fixed))
        if block is not None and number != block.line:
            for figure in found[block_figures_start:]:
                if figure.is_figure and not figure.covered:
                    figure.covered = True
                    fixed = block.check(where, figure, problems)
                    if checked is not None:
                        checked.append((number - 1, figure.start, figure.end))
                    if fixes is not None and fixed is not None:
                        fixes.append((number - 1, figure.start, figure.end, fixed))
        if exempt_reason is not None:
            continue
        for figure in found:
            if figure.is_figure and not figure.covered:
                message = f"{where}: {figure.text} has no claim marker ({line.strip()[:90]})"
                unmarked.append((fingerprint(figure.text, line), message))
                if collect is not None:
                    collect.append((number, figure))
    if exempt_reason is not None:
        problems.append(f"{path}: exempt-begin ({exempt_reason}) without exempt-end")
    if block is not None:
        problems.append(f"{path}:{block.line}: claim-begin without claim-end")


class ClaimBlock:
    """`<!-- claim-begin: FILE#POINTER [scale=S] -->` … `<!-- claim-end -->`:
    every figure on the lines between (prose, table cells, command output)
    that no marker of its own covers is checked, in reading order, against
    the next number of the list at POINTER (nested lists read row by row),
    to the places the figure is quoted to, sign included (−9.8 %)."""

    def __init__(self, line, path, pointer, values, scale):
        self.line = line
        self.path = path
        self.pointer = pointer
        self.values = values
        self.scale = scale
        self.used = 0

    @classmethod
    def open(cls, where, number, body, results, problems):
        try:
            sources, options = parse_fields(body)
            if len(sources) != 1:
                raise ValueError("a block names one FILE#POINTER")
            scale = float(options.get("scale", "1"))
            path, pointer = sources[0]
            values = results.numbers(path, pointer)
        except (ValueError, LookupError) as error:
            problems.append(f"{where}: bad claim-begin ({error}); want FILE#POINTER [scale=S] naming a list of numbers")
            return cls(number, "?", "", None, 1.0)
        return cls(number, path, pointer, values, scale)

    def check(self, where, figure, problems):
        """Checks one figure; returns its source's value written as the
        figure was when they disagree (for --fix), else None."""
        if self.values is None:
            return None
        if self.used >= len(self.values):
            if self.used == len(self.values):
                problems.append(f"{where}: {figure.text} is past the {len(self.values)} numbers of {self.path}#{self.pointer} (claim block of line {self.line})")
            self.used += 1
            return None
        source = self.values[self.used] * self.scale
        self.used += 1
        decimals = figure.decimals()
        if agrees(figure.signed, source, decimals, 1.0):
            return None
        problems.append(
            f"{where}: quotes {figure.text} but number {self.used - 1} of {self.path}#{self.pointer} is {source!r}"
            f" (rounded to {decimals} decimals: {round(abs(source), decimals)}; claim block of line {self.line})"
        )
        return written_as(figure.text, abs(source), decimals)

    def close(self, where, problems):
        if self.values is not None and self.used < len(self.values):
            problems.append(
                f"{where}: the claim block of line {self.line} quotes {self.used} figures but {self.path}#{self.pointer} holds {len(self.values)}"
            )


def fingerprint(figure, line):
    """What the baseline remembers of an unmarked figure: a hash of the figure
    and its whole line, so that changing the figure (or its line) makes it a
    new, unmarked figure the check fails on."""
    return hashlib.sha1(f"{figure}\0{line.strip()}".encode()).hexdigest()[:12]


def check_claim(where, line, marker, found, results, problems):
    """One `claim:` marker: the numerals right before it agree with its sources."""
    try:
        sources, options = parse_fields(marker.group(2))
        decimals = int(options["round"])
        scale = float(options.get("scale", "1"))
        if decimals < 0:
            # A figure rounded to tens or more ends in zeros the source does not
            # fix, so a changed last digit would pass (and the self-test miss it).
            raise ValueError(f"round={decimals}: quote the figure to a whole unit or finer (round=0 or more)")
    except (KeyError, ValueError) as error:
        problems.append(f"{where}: bad claim marker ({error}); want FILE#POINTER … round=N [scale=S]")
        return []
    before = [f for f in found if f.end <= marker.start() and not f.covered]
    if len(before) < len(sources):
        problems.append(f"{where}: the claim marker names {len(sources)} sources but only {len(before)} numerals precede it")
        return []
    quoted = before[len(before) - len(sources) :]
    checked = []
    for figure, (path, pointer) in zip(quoted, sources):
        figure.covered = True
        try:
            source = results.value(path, pointer)
        except LookupError as error:
            problems.append(f"{where}: {error}")
            checked.append((figure, None))
            continue
        agree = agrees(figure.value, source, decimals, scale)
        checked.append((figure, None if agree else written_as(figure.text, source * scale, decimals)))
        if not agree:
            problems.append(
                f"{where}: quotes {figure.text} but {path}#{pointer} is {source!r}"
                f" (× {scale:g}, rounded to {decimals} decimals: {round(source * scale, decimals)})"
            )
    # The marker belongs to the numerals just before it: nothing may come
    # between the last of them and the marker except a unit or a closing mark.
    gap = mask(line[quoted[-1].end : marker.start()])
    if len(gap.strip()) > 12:
        problems.append(f"{where}: the claim marker is not right after its figure ({gap.strip()[:40]!r})")
    return checked


def written_as(example, value, decimals):
    """`value` rounded to `decimals` places, with thousands separators when
    `example` (the figure it replaces) has them."""
    grouping = "," if "," in example else ""
    return f"{value:{grouping}.{max(decimals, 0)}f}"


def fix_file(path, results):
    """Rewrites every disagreeing checked figure of `path` to its source's
    value (after a regeneration moved them); returns how many changed."""
    fixes = []
    check_file(path, results, [], [], fixes=fixes)
    if not fixes:
        return 0
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    for index, start, end, text in sorted(fixes, key=lambda fix: (fix[0], -fix[1])):
        lines[index] = lines[index][:start] + text + lines[index][end:]
    with open(os.path.join(ROOT, path), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    return len(fixes)


def check_paths(path, where, line, problems):
    """Every repository path the line names exists (globs: at least one match)."""
    for named in missing_paths(line):
        problems.append(f"{where}: names {named}, which does not exist")


@functools.lru_cache(maxsize=None)
def missing_paths(line):
    """The repository paths the line names that do not exist (read once per line, as numerals)."""
    missing = []
    for match in REPO_PATH.finditer(line):
        named = match.group(1).rstrip(".")
        if any(re.fullmatch(r"[A-Z][A-Z_]*(?:\.\w+)?", segment) for segment in named.split("/")):
            continue  # a placeholder (OUT, DIR, NAME, TARGET): not a real path
        pattern = named.replace("{", "[").replace("}", "]") if "{" in named else named
        if glob.glob(os.path.join(ROOT, pattern)) or os.path.exists(os.path.join(ROOT, named)):
            continue
        missing.append(named)
    return tuple(missing)


def self_test(results):
    """Changes, one at a time, every digit of every figure of README.md that a
    marker checks (a claim or a claim block), and the last digit of every
    checked figure of docs/*.md, and requires the check to fail naming the
    file and line."""
    tried, missed = 0, []
    for path in documents():
        with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        checked = []
        check_file(path, results, [], [], checked=checked)
        for index, start, end in checked:
            line, text = lines[index], lines[index][start:end]
            positions = [i for i, c in enumerate(text) if c.isdigit()]
            for position in positions if path == "README.md" else positions[-1:]:
                digit = text[position]
                # Two units, not one: a source value on a tie (0.9045 quoted 0.904) rounds both ways,
                # so one unit up may still be a correct quote.
                changed = text[:position] + str((int(digit) + 2) % 10) + text[position + 1 :]
                mutated = lines[:index] + [line[:start] + changed + line[end:]] + lines[index + 1 :]
                problems = []
                check_file(path, results, problems, [], text="\n".join(mutated))
                tried += 1
                if not any(p.startswith(f"{path}:{index + 1}:") for p in problems):
                    missed.append(f"{path}:{index + 1}: {text} → {changed} was not caught")
    for miss in missed:
        print(miss)
    print(f"self-test: {tried - len(missed)} of {tried} changed figures (README.md and docs/*.md) caught, each naming its file and line")
    return 1 if missed or tried == 0 else 0


def check_layout(problems):
    """docs/architecture.md's "Layout" block names every crate and front end
    (each folder under crates/ and frontends/, and fuzz/) as `NAME/`."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.find("## Layout")
    block = text[start : text.find("```", text.find("```", start) + 3)] if start >= 0 else ""
    folders = [
        os.path.relpath(path, ROOT)
        for path in sorted(glob.glob(os.path.join(ROOT, "crates", "*")) + glob.glob(os.path.join(ROOT, "frontends", "*")))
        if os.path.isdir(path)
    ] + ["fuzz"]
    for folder in folders:
        name = os.path.basename(folder)
        if not re.search(rf"(?m)^\s*{re.escape(name)}/", block):
            problems.append(f"docs/architecture.md: the Layout block does not describe {folder}/")


def documents():
    files = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-baseline", action="store_true", help="write the current unmarked counts of the docs not yet marked up")
    parser.add_argument("--list-unmarked", metavar="FILE", help="print the unmarked figures of one file")
    parser.add_argument(
        "--figures",
        nargs=3,
        metavar=("FILE", "FIRST", "LAST"),
        help="print the unmarked figures of lines FIRST..LAST of FILE as a JSON list per line (the list a claim block names)",
    )
    parser.add_argument("--fix", action="store_true", help="rewrite each marked figure that disagrees to its source's value (after regenerating results)")
    parser.add_argument("--self-test", action="store_true", help="change each checked README figure in turn; every change must fail the check")
    args = parser.parse_args()
    results = ResultsFiles(ROOT)
    if args.self_test:
        return self_test(results)
    if args.figures:
        path, first, last = args.figures[0], int(args.figures[1]), int(args.figures[2])
        collected = []
        check_file(path, results, [], [], collect=collected)
        rows = {}
        for number, figure in collected:
            if first <= number <= last:
                rows.setdefault(number, []).append(int(figure.signed) if figure.decimals() == 0 else figure.signed)
        print(json.dumps(list(rows.values()), ensure_ascii=False))
        return 0
    if args.fix:
        for path in documents():
            changed = fix_file(path, results)
            if changed:
                print(f"{path}: {changed} figure(s) rewritten to their sources; read the prose around them")
        return 0
    problems, unmarked_by_file = [], {}
    for path in documents():
        unmarked = []
        check_file(path, results, problems, unmarked)
        unmarked_by_file[path] = unmarked
    check_layout(problems)
    baseline_path = os.path.join(ROOT, BASELINE)
    baseline = {}
    if os.path.exists(baseline_path):
        with open(baseline_path, encoding="utf-8") as handle:
            baseline = json.load(handle)["unmarked_figures"]
    if "README.md" in baseline:
        problems.append(f"{BASELINE}: README.md may not be listed; every figure of the README carries a marker")
    if args.update_baseline:
        known = {p: sorted({fp for fp, _ in u}) for p, u in unmarked_by_file.items() if u and p != "README.md"}
        note = "docs not yet marked up: fingerprints of their unmarked figures (figure and line); a figure not listed fails (docs/reporting.md)"
        with open(baseline_path, "w", encoding="utf-8") as handle:
            json.dump({"note": note, "unmarked_figures": known}, handle, indent=0, sort_keys=True)
            handle.write("\n")
        print(f"wrote {BASELINE}")
        return 0
    if args.list_unmarked:
        for _, message in unmarked_by_file.get(args.list_unmarked, []):
            print(message)
        return 0
    debt = 0
    for path, unmarked in unmarked_by_file.items():
        known = set(baseline.get(path, []))
        debt += sum(1 for fp, _ in unmarked if fp in known)
        problems.extend(message for fp, message in unmarked if fp not in known)
    marked = sum(1 for _ in problems)
    for problem in problems:
        print(problem)
    if marked:
        print(f"check-claims: {marked} problem(s)", file=sys.stderr)
        return 1
    print(f"check-claims: every marked figure agrees with its source and every path exists; {debt} figures in not-yet-marked docs ({BASELINE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
