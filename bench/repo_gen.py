"""Generated Python repositories of a chosen size, for the request-path and scale benchmarks.

Real trees are what the indexes must keep up with, but a benchmark needs a size it can
choose (1k, 5k, 20k files) and the same tree every run. So this writes packages of
plausible modules: imports of sibling modules, classes with methods, functions with
loops, branches, calls into the names other modules define (the repo map's reference
graph has real edges) and a few copy-edited functions (the duplicate index has twins).
Output is deterministic for a (files, seed) pair; `ensure_repo` reuses an existing tree
(a marker file records what was generated) and can make it a git repository, as most
user trees are.

    python -m bench.repo_gen 20000 /tmp/repo20k
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

MODULES_PER_PACKAGE = 25
_MARKER = ".repo_gen"
_VERBS = ["load", "parse", "render", "fetch", "build", "merge", "resolve", "check", "encode",
          "decode", "compute", "apply", "collect", "scan", "update", "format", "split", "join"]
_NOUNS = ["record", "invoice", "token", "config", "session", "buffer", "entry", "message",
          "request", "report", "schema", "payload", "index", "batch", "ledger", "frame"]
_CLASS_SUFFIX = ["Manager", "Store", "Parser", "Client", "Builder", "Cache", "Resolver", "View"]


def _name(rng: random.Random, used: set[str]) -> str:
    while True:
        name = f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}"
        if name in used:
            name += f"_{rng.choice(_NOUNS)}"
        if name not in used:
            used.add(name)
            return name


def _body(rng: random.Random, params: list[str], callees: list[str], indent: str) -> list[str]:
    """A function body of 6-30 lines: a docstring, a loop, a branch, calls, a return."""
    p = params[0] if params else "value"
    lines = [(f'{indent}"""{rng.choice(_VERBS).capitalize()} the {rng.choice(_NOUNS)} '
             f'and return what the caller needs."""')]
    lines.append(f"{indent}result = []")
    for _ in range(rng.randint(1, 4)):
        call = rng.choice(callees) if callees else "len"
        item = rng.choice(_NOUNS)
        lines += [
            f"{indent}for {item} in {p} or ():",
            f"{indent}    if {item} is None:",
            f"{indent}        continue",
            f"{indent}    converted = {call}({item})",
            f"{indent}    if converted and len(result) < {rng.randint(10, 500)}:",
            f"{indent}        result.append(converted)",
        ]
        if rng.random() < 0.4:
            lines += [f"{indent}    else:", f"{indent}        result.append({item!s})"]
    if rng.random() < 0.5:
        lines += [f"{indent}if not result:",
                  f"{indent}    raise ValueError('no {rng.choice(_NOUNS)} in {p}')"]
    lines.append(f"{indent}return result")
    return lines


def _module(rng: random.Random, package: str, index: int, imports: list[tuple[str, list[str]]]
            ) -> tuple[str, list[str]]:
    """Source of one module and the public names it defines."""
    used: set[str] = set()
    callees = [n for _, names in imports for n in names]
    out = [(f'"""{package} module {index}: {rng.choice(_NOUNS)} handling for the '
           f'{rng.choice(_NOUNS)} pipeline."""'), "", "from __future__ import annotations", "",
           "import os", "import re", ""]
    for mod, names in imports:
        out.append(f"from {mod} import {', '.join(names)}")
    out += ["", "", f"LIMIT = {rng.randint(10, 9999)}", ""]
    public: list[str] = []
    previous: list[str] | None = None
    for _ in range(rng.randint(3, 8)):
        name = _name(rng, used)
        params = rng.sample(["items", "records", "values", "rows", "entries"], rng.randint(1, 3))
        if previous is not None and rng.random() < 0.08:
            body = previous  # a copy-edit: the duplicate index must find it
        else:
            body = _body(rng, params, callees, "    ")
        previous = body
        out += ["", f"def {name}({', '.join(params)}, *, strict: bool = False) -> list:"] + body + [""]
        public.append(name)
    for _ in range(rng.randint(0, 2)):
        cls = f"{rng.choice(_NOUNS).capitalize()}{rng.choice(_CLASS_SUFFIX)}"
        if cls in used:
            continue
        used.add(cls)
        public.append(cls)
        out += ["", f"class {cls}:", f'    """Keeps {rng.choice(_NOUNS)}s for one {rng.choice(_NOUNS)}."""',
                "", "    def __init__(self, root: str, limit: int = LIMIT) -> None:",
                "        self.root = root", "        self.limit = limit", "        self.items: list = []", ""]
        for _ in range(rng.randint(2, 6)):
            meth = _name(rng, used)
            out += [f"    def {meth}(self, items: list) -> list:"]
            out += _body(rng, ["items"], callees + ["self.items.append"], "        ") + [""]
    return "\n".join(out) + "\n", public


def generate(root: Path, files: int, seed: int = 0) -> Path:
    """Write a tree of `files` Python modules under root (which must not exist yet)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    defined: list[tuple[str, list[str]]] = []  # (module path, public names) written so far
    for i in range(files):
        pkg_no, mod_no = divmod(i, MODULES_PER_PACKAGE)
        package = f"pkg{pkg_no:04d}"
        folder = root / "src" / package
        if mod_no == 0:
            folder.mkdir(parents=True)
            (folder / "__init__.py").write_text(f'"""Package {package}."""\n')
        imports = []
        for mod, names in rng.sample(defined, min(len(defined), rng.randint(1, 4))):
            imports.append((mod, rng.sample(names, min(len(names), rng.randint(1, 3)))))
        text, public = _module(rng, package, mod_no, imports)
        (folder / f"mod{mod_no:02d}.py").write_text(text)
        defined.append((f"src.{package}.mod{mod_no:02d}", [n for n in public if not n[0].isupper()] or public))
        if len(defined) > 400:  # imports stay local-ish, as in real code
            defined.pop(rng.randrange(len(defined)))
    (root / "README.md").write_text(f"Generated repository: {files} modules, seed {seed}.\n")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def ensure_repo(root: Path, files: int, seed: int = 0, *, git: bool = True) -> Path:
    """The generated tree at root, written (and committed, with `git`) unless already there."""
    marker = root / _MARKER
    want = f"{files} {seed} {int(git)}"
    if marker.is_file() and marker.read_text().strip() == want:
        return root
    if root.exists():
        import shutil

        shutil.rmtree(root)
    generate(root, files, seed)
    (root / ".gitignore").write_text(f"{_MARKER}\n")
    if git:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
             "commit", "-q", "-m", "generated")
    marker.write_text(want + "\n")
    return root


def empty_repo(root: Path, *, git: bool = True) -> Path:
    """An empty project (one README), the baseline the request-path benchmark compares to."""
    return ensure_repo(root, 0, git=git)


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(f"/tmp/spark-repo-{count}")
    ensure_repo(target, count)
    print(target)
