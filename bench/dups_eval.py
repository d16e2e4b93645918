"""Evaluation set for the duplicate detector, built from code we did not write.

The standard library's top-level modules are split in two by a seeded shuffle: the
*indexed* half is the tree; functions of the indexed half are copied into new modules
exactly (type 1), with every parameter, local name and the function name renamed and
every literal changed (type 2), and with one statement deleted, inserted or changed,
half of them also renamed (type 3). Functions of the other half are the negatives:
real code that is no copy of anything indexed. A case is found when the original
appears among ``check_source``'s matches.

Run alone: ``python bench/dups_eval.py [N_PER_TYPE]`` prints recall per type and precision.
"""

from __future__ import annotations

import ast
import copy
import random
import sys
import sysconfig
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.detectors.normalize import fingerprint, iter_functions


@dataclass
class Case:
    kind: str  # "type1" | "type2" | "type3" | "negative"
    source: str  # the new module's text
    original: tuple[str, str] | None  # (path, symbol) of the function it copies


def stdlib_modules() -> list[Path]:
    lib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in lib.glob("*.py") if p.is_file())


def split_modules(seed: int = 7) -> tuple[list[Path], list[Path]]:
    mods = stdlib_modules()
    random.Random(seed).shuffle(mods)
    half = len(mods) // 2
    return sorted(mods[:half]), sorted(mods[half:])


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str], rng: random.Random) -> None:
        self.mapping, self.rng = mapping, rng

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.Nonlocal:
        node.names = [self.mapping.get(n, n) for n in node.names]
        return node

    visit_Global = visit_Nonlocal  # type: ignore[assignment]

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        self.generic_visit(node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        v = node.value
        if isinstance(v, bool) or v is None or v is Ellipsis:
            return node
        if isinstance(v, int):
            node.value = v + self.rng.randint(1, 9)
        elif isinstance(v, float):
            node.value = v * 2 + 0.5
        elif isinstance(v, str) and v:
            node.value = "x_" + v[::-1]
        return node


def rename(func: ast.FunctionDef | ast.AsyncFunctionDef, rng: random.Random) -> None:
    """Rename parameters, assigned locals and the function; change every literal."""
    names: set[str] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.arg not in ("self", "cls"):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
    suffixes = ["v", "tmp", "val", "item"]
    mapping = {n: f"{n}_{rng.choice(suffixes)}{i}" for i, n in enumerate(sorted(names))}
    mapping[func.name] = f"{func.name}_copy{rng.randint(0, 999)}"
    _Renamer(mapping, rng).visit(func)


def statement_lists(func: ast.AST) -> list[list[ast.stmt]]:
    out = []
    for node in ast.walk(func):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                out.append(body)
    return out


_INSERTS = [
    "logger.debug('checkpoint %r', locals())",
    "if result is None:\n    raise ValueError('no result')",
    "count = count + 1",
    "print('debug', flush=True)",
    "assert isinstance(value, object), 'bad value'",
]


def mutate_statement(func: ast.FunctionDef | ast.AsyncFunctionDef, rng: random.Random) -> str:
    """Delete, insert or change one statement somewhere in the function."""
    lists = [b for b in statement_lists(func) if b is not func.body or len(b) > 1] or [func.body]
    body = rng.choice(lists)
    op = rng.choice(["delete", "insert", "change"])
    start = 1 if body is func.body and ast.get_docstring(func) else 0
    if op == "delete" and len(body) - start > 1:
        del body[rng.randrange(start, len(body))]
        return op
    if op == "change":
        idx = rng.randrange(start, len(body)) if len(body) > start else 0
        target = body[idx]
        for node in ast.walk(target):
            if (
                isinstance(node, ast.expr)
                and not isinstance(node, (ast.Name, ast.Constant, ast.Starred))
                and not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del))
            ):
                call = ast.Call(func=ast.Name("normalize", ast.Load()), args=[copy.deepcopy(node)],
                                keywords=[ast.keyword("strict", ast.Constant(True))])
                _replace_expr(target, node, call)
                return op
    new = ast.parse(rng.choice(_INSERTS)).body[0]
    body.insert(rng.randrange(start, len(body) + 1), new)
    return "insert"


def _replace_expr(root: ast.AST, old: ast.expr, new: ast.expr) -> None:
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new
                        return


def candidate_functions(
    paths: list[Path], base: Path, enough: int | None = None
) -> list[tuple[str, str, str, ast.AST]]:
    """(rel path, symbol, exact source text, node) of indexable functions, reading the
    files in the order given until `enough` are found (all when None)."""
    out: list[tuple[str, str, str, ast.AST]] = []
    for path in paths:
        if enough is not None and len(out) >= enough:
            break
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for symbol, node in iter_functions(tree):
            if not fingerprint(node, symbol).indexable:
                continue  # (per node: a property's getter and setter share a symbol)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            seg = textwrap.dedent("".join(lines[first - 1 : node.end_lineno]))
            try:
                ast.parse(seg)
            except SyntaxError:
                continue  # a multi-line string at column 0 keeps a method from dedenting
            out.append((path.relative_to(base).as_posix(), symbol, seg, node))
    return out


def build_cases(n_per_type: int = 150, seed: int = 11) -> tuple[list[Path], list[Case]]:
    """Indexed modules and the cases: n of each clone type and n negatives."""
    indexed, held = split_modules()
    base = indexed[0].parent
    rng = random.Random(seed)
    # files in a seeded order, read until there are 4x the functions needed: a spread
    # over many modules without fingerprinting the whole library for a small set
    order = list(indexed)
    rng.shuffle(order)
    pool = candidate_functions(order, base, enough=12 * n_per_type)
    rng.shuffle(pool)
    cases: list[Case] = []
    for kind_i, kind in enumerate(("type1", "type2", "type3")):
        for rel, symbol, text, _node in pool[kind_i * n_per_type:(kind_i + 1) * n_per_type]:
            if kind == "type1":
                src = text
            else:
                func = ast.parse(text).body[0]
                assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
                if kind == "type2":
                    rename(func, rng)
                else:
                    mutate_statement(func, rng)
                    if rng.random() < 0.5:
                        rename(func, rng)
                src = ast.unparse(func)
            cases.append(Case(kind, "import os\n\n\n" + src + "\n", (rel, symbol)))
    order = list(held)
    rng.shuffle(order)
    negatives = candidate_functions(order, base, enough=4 * n_per_type)
    rng.shuffle(negatives)
    for _rel, _symbol, text, _node in negatives[:n_per_type]:
        cases.append(Case("negative", "import os\n\n\n" + text + "\n", None))
    return indexed, cases


@dataclass
class Scores:
    recall: dict[str, float]
    precision: float
    label_accuracy: float
    negatives_flagged: float
    # scan only: a pair with a function the original is itself paired with is a clone
    # too (the stdlib has real clones); this precision counts those as right
    precision_transitive: float | None = None


def evaluate(index, cases: list[Case]) -> Scores:
    """Recall per type (original among the matches), precision over every match."""
    found: dict[str, list[int]] = {}
    true_matches = false_matches = labelled_right = labelled = flagged_neg = 0
    for case in cases:
        matches = index.check_source(case.source)
        if case.kind == "negative":
            false_matches += len(matches)
            flagged_neg += bool(matches)
            continue
        hit = [m for m in matches if (m.twin_path, m.twin_symbol) == case.original]
        found.setdefault(case.kind, []).append(int(bool(hit)))
        if hit:
            labelled += 1
            labelled_right += hit[0].clone_type == int(case.kind[-1])
        true_matches += len(hit)
        false_matches += len(matches) - len(hit)
    recall = {k: sum(v) / len(v) for k, v in sorted(found.items())}
    total = true_matches + false_matches
    negs = sum(1 for c in cases if c.kind == "negative")
    return Scores(
        recall=recall,
        precision=true_matches / total if total else 1.0,
        label_accuracy=labelled_right / labelled if labelled else 0.0,
        negatives_flagged=flagged_neg / negs if negs else 0.0,
    )


def evaluate_scan(indexed: list[Path], cases: list[Case]) -> Scores:
    """The same cases through `spark dups scan`'s path: every case is a module in the
    tree beside the indexed half, and `pairs()` must pair each copy with its original.
    Precision counts the pairs that involve a case module."""
    import shutil
    import tempfile

    from core.detectors.duplicates import DuplicateIndex

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cases").mkdir()
        for path in indexed:
            shutil.copy(path, root / path.name)
        for i, case in enumerate(cases):
            (root / "cases" / f"case{i}.py").write_text(case.source)
        index = DuplicateIndex(root)
        index.build()
        pairs = index.pairs()
    partners: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for p in pairs:
        for mine, other in ((p.a, p.b), (p.b, p.a)):
            partners.setdefault((mine.path, mine.symbol), set()).add((other.path, other.symbol))
    by_file: dict[str, set[tuple[str, str]]] = {}
    for (path, _symbol), others in partners.items():
        if path.startswith("cases/"):
            by_file.setdefault(path, set()).update(others)
    found: dict[str, list[int]] = {}
    right = wrong = flagged = transitive = 0
    for i, case in enumerate(cases):
        got = by_file.get(f"cases/case{i}.py", set())
        if case.kind == "negative":
            wrong += len(got)
            flagged += bool(got)
            continue
        hit = case.original in got
        found.setdefault(case.kind, []).append(int(hit))
        right += hit
        wrong += len(got) - hit
        assert case.original is not None
        transitive += len((got - {case.original}) & partners.get(case.original, set()))
    negs = sum(1 for c in cases if c.kind == "negative")
    return Scores(
        recall={k: sum(v) / len(v) for k, v in sorted(found.items())},
        precision=right / (right + wrong) if right + wrong else 1.0,
        label_accuracy=float("nan"),
        negatives_flagged=flagged / negs if negs else 0.0,
        precision_transitive=(right + transitive) / (right + wrong) if right + wrong else 1.0,
    )


def run(n_per_type: int = 150, built: tuple[list[Path], list[Case]] | None = None) -> Scores:
    """Index the indexed half in a temporary folder and evaluate the cases on it."""
    import shutil
    import tempfile

    from core.detectors.duplicates import DuplicateIndex

    indexed, cases = built if built is not None else build_cases(n_per_type)
    with tempfile.TemporaryDirectory() as tmp:
        for path in indexed:
            shutil.copy(path, Path(tmp) / path.name)
        index = DuplicateIndex(tmp)
        index.build()
        return evaluate(index, cases)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    built = build_cases(n)
    scores = run(n, built)
    for kind, value in scores.recall.items():
        print(f"recall {kind}: {value:.3f}")
    print(f"precision (matches that point at the copied original): {scores.precision:.3f}")
    print(f"clone-type label accuracy on found cases: {scores.label_accuracy:.3f}")
    print(f"negatives with any match: {scores.negatives_flagged:.3f}")
    scan = evaluate_scan(*built)
    print("scan: recall " + ", ".join(f"{k} {v:.3f}" for k, v in scan.recall.items())
          + f"; precision {scan.precision:.3f} (counting clones of the original: "
          f"{scan.precision_transitive:.3f}); negatives paired {scan.negatives_flagged:.3f}")


if __name__ == "__main__":
    main()
