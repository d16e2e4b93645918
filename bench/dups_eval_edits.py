"""A second, independent evaluation set for the duplicate detector: real copy-edits.

``dups_eval.py`` renames mechanically (``name_v3``) and mutates with a few generic
operators on the stdlib's top-level modules. This set is different in both ways:

* the code: stdlib *packages* (``email``, ``json``, ``http``, ``logging``, ...) and
  packages of this project's virtual environment (``packaging``, ``httpx``, ``jinja2``,
  ...), none of them in the first set; the negatives come from other packages
  (``asyncio``, ``unittest``, ``rich``, ``pygments``, ``git``);
* the edits are the ones people (and models) make when they copy a function, each with
  the clone type we assign to it (documented in docs/detectors.md):

  type 1  verbatim text; reformatted (``ast.unparse``: layout and comments gone);
          docstring added or changed; type hints added (annotations are dropped)
  type 2  function, parameters and locals renamed consistently to plausible words;
          default values and string literals changed; keyword arguments of calls
          reordered; renamed and literals changed together
  type 3  ``if`` branches swapped under a negated test; a logging/print line added;
          a guard clause removed; a comparison operator changed; the body wrapped in
          try/except; a for-append loop turned into a comprehension; half of them also
          renamed

Every copy lands in its own module under ``planted/`` beside the tree. A case is found
by ``check_source`` when the original is among its matches, and by ``pairs()`` (``spark
dups scan``) when the pair (copy, original) is reported.

Run alone: ``python bench/dups_eval_edits.py [N_PER_TYPE]``.
"""

from __future__ import annotations

import ast
import random
import shutil
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.dups_eval import statement_lists as _bodies
from core.detectors.normalize import fingerprint, iter_functions

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SITE = Path(sysconfig.get_paths()["purelib"])
TREE_PACKAGES = [
    (STDLIB, "email"), (STDLIB, "json"), (STDLIB, "http"), (STDLIB, "logging"),
    (STDLIB, "urllib"), (STDLIB, "concurrent"), (STDLIB, "importlib"), (STDLIB, "xml"),
    (SITE, "packaging"), (SITE, "h11"), (SITE, "httpx"), (SITE, "jinja2"),
    (SITE, "markdown_it"), (SITE, "pathspec"),
]  # fmt: skip
NEGATIVE_PACKAGES = [
    (STDLIB, "asyncio"), (STDLIB, "unittest"), (SITE, "rich"), (SITE, "git"),
    (SITE, "anyio"), (STDLIB, "tomllib"),
]  # fmt: skip

WORDS = ["data", "item", "value", "result", "node", "buf", "entry", "obj", "key", "info",
         "payload", "chunk", "record", "spec", "target", "source", "cfg", "tmp", "acc", "out"]


@dataclass
class Case:
    kind: str  # "type1" | "type2" | "type3" | "negative"
    op: str  # the edit that made it
    source: str  # the new module's text
    original: tuple[str, str] | None  # (path, symbol) of the function it copies


@dataclass
class Func:
    rel: str
    symbol: str
    text: str  # the function's exact source, dedented


def _python_files(base: Path, package: str) -> list[Path]:
    root = base / package
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def functions_of(base: Path, package: str) -> list[Func]:
    """Functions, methods and nested functions of a package with at least 3 statements
    (docstring aside)."""
    out: list[Func] = []
    for path in _python_files(base, package):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        lines = text.splitlines(keepends=True)
        for symbol, node in iter_functions(tree, nested=True):  # closures' helpers too
            if fingerprint(node, symbol).statements < 3:
                continue
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            seg = textwrap.dedent("".join(lines[first - 1 : node.end_lineno]))
            try:
                ast.parse(seg)
            except SyntaxError:
                continue
            rel = (Path(package) / path.relative_to(base / package)).as_posix()
            out.append(Func(rel, symbol, seg))
    return out


# ---------------------------------------------------------------- edit helpers
def _func(text: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return node


def _body_start(func: ast.AST) -> int:
    return 1 if ast.get_docstring(func) is not None else 0  # type: ignore[arg-type]


def rename_consistently(func: ast.AST, rng: random.Random) -> bool:
    """The function, its parameters and assigned locals get plausible new names."""
    names: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.arg not in ("self", "cls"):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    pool = [w for w in WORDS if w not in names]
    rng.shuffle(pool)
    mapping = {n: (pool[i] if i < len(pool) else f"{pool[0]}{i}")
               for i, n in enumerate(sorted(names))}
    new_name = rng.choice(["helper", "process", "handle", "compute", "do"]) + "_" + \
        rng.choice(WORDS)
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id in mapping:
            node.id = mapping[node.id]
        elif isinstance(node, ast.arg) and node.arg in mapping:
            node.arg = mapping[node.arg]
    func.name = new_name  # type: ignore[attr-defined]
    return True


def _not_code(func: ast.AST) -> set[int]:
    """ids of the constants that are docstrings or inside annotations (at any depth)."""
    out: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if ast.get_docstring(node) is not None:
                out.add(id(node.body[0].value))  # type: ignore[attr-defined]
            if not isinstance(node, ast.ClassDef) and node.returns is not None:
                out.update(id(n) for n in ast.walk(node.returns))
        elif isinstance(node, ast.AnnAssign) or (
            isinstance(node, ast.arg) and node.annotation is not None
        ):
            out.update(id(n) for n in ast.walk(node.annotation))  # type: ignore[arg-type]
    return out


def change_literals(func: ast.AST, rng: random.Random) -> bool:
    """Default values and string literals change (not docstrings nor annotations)."""
    changed = False
    skip = _not_code(func)
    for node in ast.walk(func):
        if id(node) in skip or not isinstance(node, ast.Constant):
            continue
        v = node.value
        if isinstance(v, str) and v and rng.random() < 0.7:
            node.value = rng.choice(["", "x", "default", "n/a"]) + v[: len(v) // 2]
            changed = changed or node.value != v
    args = func.args  # type: ignore[attr-defined]
    for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
        if isinstance(d, ast.Constant) and isinstance(d.value, int) and not isinstance(
            d.value, bool
        ):
            d.value += rng.randint(1, 5)
            changed = True
    return changed


def reorder_keywords(func: ast.AST, rng: random.Random) -> bool:
    changed = False
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            named = [k for k in node.keywords if k.arg is not None]
            if len(named) >= 2 and len(named) == len(node.keywords):
                node.keywords = list(reversed(named))
                changed = True
    return changed


def add_docstring(func: ast.AST, rng: random.Random) -> bool:
    doc = ast.Expr(ast.Constant("Copied helper: " + rng.choice(WORDS) + "."))
    body = func.body  # type: ignore[attr-defined]
    if _body_start(func):
        body[0] = doc
    else:
        body.insert(0, doc)
    return True


def add_type_hints(func: ast.AST, rng: random.Random) -> bool:
    args = func.args  # type: ignore[attr-defined]
    changed = False
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        if a.annotation is None and a.arg not in ("self", "cls"):
            a.annotation = ast.Name(rng.choice(["str", "int", "object", "Any"]), ast.Load())
            changed = True
    if func.returns is None:  # type: ignore[attr-defined]
        func.returns = ast.Constant(None)  # type: ignore[attr-defined]
        changed = True
    return changed


def swap_if(func: ast.AST, rng: random.Random) -> bool:
    ifs = [n for n in ast.walk(func) if isinstance(n, ast.If) and n.orelse
           and not (len(n.orelse) == 1 and isinstance(n.orelse[0], ast.If))]
    if not ifs:
        return False
    node = rng.choice(ifs)
    node.test = ast.UnaryOp(ast.Not(), node.test)
    node.body, node.orelse = node.orelse, node.body
    return True


def add_log_line(func: ast.AST, rng: random.Random) -> bool:
    line = rng.choice([
        "logger.debug('entering %s', 'helper')",
        "print('DEBUG: here')",
        "logging.info('step done')",
    ])
    body = rng.choice(_bodies(func))
    start = _body_start(func) if body is func.body else 0  # type: ignore[attr-defined]
    body.insert(rng.randint(start, len(body)), ast.parse(line).body[0])
    return True


def remove_guard(func: ast.AST, rng: random.Random) -> bool:
    body = func.body  # type: ignore[attr-defined]
    for i, stmt in enumerate(body):
        if (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1
                and isinstance(stmt.body[0], (ast.Return, ast.Raise, ast.Continue))
                and len(body) > 2):
            del body[i]
            return True
    return False


_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
         ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
         ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def change_comparison(func: ast.AST, rng: random.Random) -> bool:
    comps = [n for n in ast.walk(func) if isinstance(n, ast.Compare)]
    if not comps:
        return False
    node = rng.choice(comps)
    node.ops[0] = _FLIP[type(node.ops[0])]()
    return True


def wrap_try(func: ast.AST, rng: random.Random) -> bool:
    body = func.body  # type: ignore[attr-defined]
    start = _body_start(func)
    handler = ast.ExceptHandler(
        type=ast.Name("Exception", ast.Load()), name=None,
        body=ast.parse("logger.exception('failed')\nraise").body)
    body[start:] = [ast.Try(body=body[start:], handlers=[handler], orelse=[], finalbody=[])]
    return True


def loop_to_comprehension(func: ast.AST, rng: random.Random) -> bool:
    for body in _bodies(func):
        for i in range(len(body) - 1):
            first, loop = body[i], body[i + 1]
            if not (isinstance(first, ast.Assign) and len(first.targets) == 1
                    and isinstance(first.targets[0], ast.Name)
                    and isinstance(first.value, ast.List) and not first.value.elts
                    and isinstance(loop, ast.For) and not loop.orelse and len(loop.body) == 1):
                continue
            stmt = loop.body[0]
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                    and isinstance(stmt.value.func, ast.Attribute)
                    and stmt.value.func.attr == "append"
                    and isinstance(stmt.value.func.value, ast.Name)
                    and stmt.value.func.value.id == first.targets[0].id
                    and len(stmt.value.args) == 1):
                continue
            comp = ast.ListComp(stmt.value.args[0], [ast.comprehension(
                loop.target, loop.iter, [], int(isinstance(loop, ast.AsyncFor)))])
            body[i : i + 2] = [ast.Assign(first.targets, comp, lineno=first.lineno)]
            return True
    return False


Edit = Callable[[ast.AST, random.Random], bool]
OPS: dict[str, tuple[int, list[Edit]]] = {
    "verbatim": (1, []),
    "reformatted": (1, []),  # ast.unparse alone
    "docstring": (1, [add_docstring]),
    "type_hints": (1, [add_type_hints]),
    "rename": (2, [rename_consistently]),
    "literals": (2, [change_literals]),
    "kwargs_reordered": (2, [reorder_keywords]),
    "rename_literals": (2, [rename_consistently, change_literals]),
    "swap_if": (3, [swap_if]),
    "log_line": (3, [add_log_line]),
    "remove_guard": (3, [remove_guard]),
    "comparison": (3, [change_comparison]),
    "try_wrap": (3, [wrap_try]),
    "comprehension": (3, [loop_to_comprehension]),
}


def apply(func: Func, op: str, rng: random.Random) -> str | None:
    """The copy's source after the edit, or None when the edit does not apply."""
    if op == "verbatim":
        return func.text
    node = _func(func.text)
    for edit in OPS[op][1]:
        if not edit(node, rng):
            return None
    if OPS[op][0] == 3 and rng.random() < 0.5:
        rename_consistently(node, rng)
    src = ast.unparse(ast.fix_missing_locations(node))
    return src if src.strip() != ast.unparse(_func(func.text)).strip() or op == "reformatted" \
        else None


@dataclass
class Built:
    tree: list[tuple[Path, str]]
    cases: list[Case] = field(default_factory=list)


def build_cases(n_per_type: int = 120, seed: int = 23) -> Built:
    rng = random.Random(seed)
    pool = [f for base, pkg in TREE_PACKAGES for f in functions_of(base, pkg)]
    rng.shuffle(pool)
    built = Built(TREE_PACKAGES)
    by_type: dict[int, list[str]] = {}
    for op, (ctype, _edits) in OPS.items():
        by_type.setdefault(ctype, []).append(op)
    used: set[tuple[str, str]] = set()
    for ctype, ops in sorted(by_type.items()):
        for k in range(n_per_type):
            op = ops[k % len(ops)]
            for func in pool:
                if (func.rel, func.symbol) in used:
                    continue
                src = apply(func, op, rng)
                if src is not None:
                    used.add((func.rel, func.symbol))
                    built.cases.append(Case(f"type{ctype}", op, "import logging\n\n\n" + src
                                            + "\n", (func.rel, func.symbol)))
                    break
    negs = [f for base, pkg in NEGATIVE_PACKAGES for f in functions_of(base, pkg)]
    rng.shuffle(negs)
    for func in negs[:n_per_type]:
        built.cases.append(Case("negative", "none", "import logging\n\n\n" + func.text + "\n",
                                None))
    return built


def materialize(built: Built, root: Path, *, planted: bool) -> None:
    for base, pkg in built.tree:
        shutil.copytree(base / pkg, root / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if planted:
        (root / "planted").mkdir()
        for i, case in enumerate(built.cases):
            (root / "planted" / f"copy_{i:04d}.py").write_text(case.source, encoding="utf-8")


@dataclass
class Scores:
    recall: dict[str, float]
    type_right: dict[str, float]  # among found cases, the reported type is the case's
    recall_by_op: dict[str, float]
    precision: float  # reported twins/pairs of planted copies that are their original
    negatives_flagged: float
    extra: dict[str, float] = field(default_factory=dict)


def _score(per_case: list[tuple[Case, list[tuple[str, str, int]]]]) -> Scores:
    found: dict[str, list[int]] = {}
    right: dict[str, list[int]] = {}
    by_op: dict[str, list[int]] = {}
    good = bad = flagged = negs = 0
    for case, twins in per_case:
        if case.kind == "negative":
            negs += 1
            bad += len(twins)
            flagged += bool(twins)
            continue
        hit = [t for t in twins if (t[0], t[1]) == case.original]
        found.setdefault(case.kind, []).append(int(bool(hit)))
        by_op.setdefault(case.op, []).append(int(bool(hit)))
        if hit:
            right.setdefault(case.kind, []).append(int(hit[0][2] == int(case.kind[-1])))
        good += bool(hit)
        bad += len(twins) - bool(hit)

    def mean(d: dict[str, list[int]]) -> dict[str, float]:
        return {k: sum(v) / len(v) for k, v in sorted(d.items())}

    return Scores(mean(found), mean(right), mean(by_op),
                  good / (good + bad) if good + bad else 1.0, flagged / negs if negs else 0.0)


def evaluate_check(built: Built) -> Scores:
    from core.detectors.duplicates import DuplicateIndex

    with tempfile.TemporaryDirectory() as tmp:
        materialize(built, Path(tmp), planted=False)
        index = DuplicateIndex(tmp)
        index.build()
        per_case = [(c, [(m.twin_path, m.twin_symbol, m.clone_type)
                         for m in index.check_source(c.source)]) for c in built.cases]
    return _score(per_case)


def evaluate_scan(built: Built) -> Scores:
    """Through ``pairs()``: each planted copy must be paired with its original."""
    from core.detectors.duplicates import DuplicateIndex

    with tempfile.TemporaryDirectory() as tmp:
        materialize(built, Path(tmp), planted=True)
        index = DuplicateIndex(tmp)
        index.build()
        pairs = index.pairs()
    twins: dict[str, list[tuple[str, str, int]]] = {}
    background = 0
    for p in pairs:
        touched = False
        for mine, other in ((p.a, p.b), (p.b, p.a)):
            if mine.path.startswith("planted/"):
                twins.setdefault(mine.path, []).append((other.path, other.symbol, p.clone_type))
                touched = True
        background += not touched
    per_case = [(c, twins.get(f"planted/copy_{i:04d}.py", []))
                for i, c in enumerate(built.cases)]
    scores = _score(per_case)
    scores.extra = {"pairs": len(pairs), "pairs_without_planted_copies": background,
                    "self_pairs": sum(p.a == p.b for p in pairs),
                    "similarity_out_of_range": sum(not 0 <= p.similarity <= 1 for p in pairs)}
    return scores


def _print(label: str, s: Scores) -> None:
    print(f"{label}: recall " + ", ".join(f"{k} {v:.3f}" for k, v in s.recall.items())
          + f"; precision {s.precision:.3f}; type right "
          + ", ".join(f"{k} {v:.2f}" for k, v in s.type_right.items())
          + f"; negatives flagged {s.negatives_flagged:.3f}")
    misses = {k: v for k, v in s.recall_by_op.items() if v < 1}
    if misses:
        print("  recall below 1 by edit: " + ", ".join(f"{k} {v:.2f}" for k, v in misses.items()))
    if s.extra:
        print("  " + ", ".join(f"{k} {v}" for k, v in s.extra.items()))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    built = build_cases(n)
    _print("check_source", evaluate_check(built))
    _print("dups scan", evaluate_scan(built))


if __name__ == "__main__":
    main()
