"""Which test files to run for a change: the ones that import what changed.

Why static imports and not pytest's collection: collection imports every test module
(seconds on a big suite) while the user is already reading; reading imports with `ast`
takes milliseconds and is what "related" means here.  A test file is related when it
changed itself, or imports a changed module directly or through up to MAX_DEPTH modules,
or sits under a changed conftest.py.  Ranked (changed, then by import distance, then by
how often it names what changed) and cut at a cap.  When code changed but no test relates
to it, the whole suite runs; when only prose changed (README, docs), none does.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from core import pyparse
from core.verify.shadow import LINK_DIRS, SKIP_DIRS

MAX_DEPTH = 3
PROSE = frozenset({".md", ".rst", ".txt", ".adoc"})
_IMPORTS_CACHE: dict[bytes, frozenset[str]] = {}  # content hash -> absolute import names
_CACHE_LIMIT = 20_000
_FROM_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\s+([\w, ]+)|import\s+([\w., ]+))",
                          re.MULTILINE)


@dataclass(frozen=True)
class Selection:
    """Test files to run (posix paths relative to the root), or the whole suite."""

    paths: tuple[str, ...]
    run_all: bool
    reason: str
    left_out: int = 0  # related test files over the cap

    @property
    def nothing(self) -> bool:
        return not self.paths and not self.run_all


def is_test_file(rel: str) -> bool:
    name = PurePosixPath(rel).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def module_name(rel: str) -> str | None:
    """The import name of a Python file ("src/pkg/a.py" -> "pkg.a"), None otherwise."""
    p = PurePosixPath(rel)
    if p.suffix != ".py":
        return None
    parts = list(p.with_suffix("").parts)
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(x.isidentifier() for x in parts) else None


def python_files(root: Path) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                         and not (here == root and d in LINK_DIRS))
        for name in sorted(files):
            if name.endswith(".py"):
                yield (here / name).relative_to(root).as_posix()


def imports_of(rel: str, text: str) -> frozenset[str]:
    """Absolute module names the file imports, including `pkg.name` for `from pkg import
    name` (name may be a submodule); relative imports are resolved against rel."""
    key = hashlib.blake2b(rel.encode() + b"\0" + text.encode("utf-8", "replace"),
                          digest_size=16).digest()
    hit = _IMPORTS_CACHE.get(key)
    if hit is not None:
        return hit
    found: set[str] = set()
    package = PurePosixPath(rel).parent.parts
    if module_name(rel) is not None and PurePosixPath(rel).parts[0] in ("src", "lib"):
        package = package[1:]
    try:
        tree = pyparse.parse(text)
    except (SyntaxError, ValueError):
        for m in _FROM_IMPORT.finditer(text):  # a broken file still says what it imports
            if m.group(1):
                found.add(m.group(1))
                found.update(f"{m.group(1)}.{n.strip()}" for n in m.group(2).split(",") if
                             n.strip())
            else:
                found.update(n.strip().split(" ")[0] for n in m.group(3).split(","))
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package[:len(package) - (node.level - 1)] if node.level > 1 \
                        else package
                    base = ".".join([*up, base] if base else up)
                if base:
                    found.add(base)
                    found.update(f"{base}.{a.name}" for a in node.names if a.name != "*")
    out = frozenset(f for f in found if f)
    if len(_IMPORTS_CACHE) > _CACHE_LIMIT:
        _IMPORTS_CACHE.clear()
    _IMPORTS_CACHE[key] = out
    return out


def _prefixes(name: str) -> Iterable[str]:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        yield ".".join(parts[:i])


def select_tests(root: Path, changed: Iterable[str], *, names: Iterable[str] = (),
                 cap: int = 200) -> Selection:
    """The test files under root related to the changed paths (posix, relative).

    `names` are identifiers the change defines or touches (functions, classes); a test
    file that mentions more of them ranks higher within its distance.
    """
    root = Path(root)
    changed = sorted(set(changed))
    if not changed:
        return Selection((), False, "nothing changed")
    if all(PurePosixPath(c).suffix.lower() in PROSE for c in changed):
        return Selection((), False, "only prose changed; no test runs")
    files = list(python_files(root))
    texts: dict[str, str] = {}
    for rel in files:
        try:
            texts[rel] = (root / rel).read_text("utf-8", "replace")
        except OSError:
            continue
    by_module = {m: rel for rel in texts if (m := module_name(rel)) is not None}
    importers: dict[str, set[str]] = {}
    for rel, text in texts.items():
        for name in imports_of(rel, text):
            for prefix in _prefixes(name):
                target = by_module.get(prefix)
                if target is not None and target != rel:
                    importers.setdefault(target, set()).add(rel)
                    break
    # breadth-first from the changed files along "is imported by"
    distance: dict[str, int] = {}
    queue: deque[str] = deque()
    for rel in changed:
        if rel in texts:
            distance[rel] = 0
            queue.append(rel)
    while queue:
        rel = queue.popleft()
        if distance[rel] >= MAX_DEPTH:
            continue
        for user in importers.get(rel, ()):
            if user not in distance:
                distance[user] = distance[rel] + 1
                queue.append(user)
    for rel in changed:  # a changed conftest.py concerns every test beside and below it
        if PurePosixPath(rel).name == "conftest.py":
            folder = PurePosixPath(rel).parent
            for t in texts:
                if is_test_file(t) and (folder == PurePosixPath(".")
                                        or PurePosixPath(t).is_relative_to(folder)):
                    distance.setdefault(t, 1)
    tests = [t for t in distance if is_test_file(t)]
    if not tests:
        code = [c for c in changed if PurePosixPath(c).suffix.lower() not in PROSE]
        return Selection((), True, f"no test imports {code[0]}; running the whole suite")
    wanted = [n for n in set(names) if len(n) > 2]

    def rank(t: str) -> tuple[int, int, str]:
        mentions = sum(1 for n in wanted if n in texts.get(t, ""))
        return distance[t], -mentions, t

    tests.sort(key=rank)
    chosen = tuple(tests[:cap])
    why = f"{len(chosen)} test file(s) import the changed code"
    return Selection(chosen, False, why, max(0, len(tests) - cap))


def changed_names(old_text: str, new_text: str) -> set[str]:
    """Names of functions and classes whose source differs between two texts (both
    sides: a removed function matters as much as an added one)."""
    def defs(text: str) -> dict[str, str]:
        try:
            tree = pyparse.parse(text)
        except (SyntaxError, ValueError):
            return {}
        out = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out[node.name] = ast.get_source_segment(text, node) or ""
        return out

    a, b = defs(old_text), defs(new_text)
    return {n for n in set(a) | set(b) if a.get(n) != b.get(n)}
