"""The slop rules ruff already has, run on an edited file's text through ruff's stdin.

We pick the rules that catch what fast models pad code with, run ruff ``--isolated``
(the user's config must not switch them off or on) and turn its JSON into
``RawFinding``s. A ruff fix becomes whole-line replacement text, which the app can
offer as an edit like any hunk.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from core.errors import SparkError

# code -> (what is wrong, why it is slop); our words, ruff's message goes beside them
RUFF_RULES: dict[str, str] = {
    "PERF401": "A loop that only appends to a list is a list comprehension written longhand.",
    "PERF402": "A loop that copies a list item by item is `list(x)` or `x.copy()`.",
    "SIM103": "`if c: return True else: return False` is `return c` (or `bool(c)`).",
    "SIM210": "`True if c else False` is `bool(c)`.",
    "SIM211": "`False if c else True` is `not c`.",
    "SIM110": "A loop that returns True on the first match reimplements `any()`/`all()`.",
    "SIM102": "Nested `if`s with nothing between them are one `if` with `and`.",
    "PLR5501": "`else:` holding only an `if` is an `elif`: one level less nesting.",
    "SIM117": "Nested `with` blocks are one `with` with several context managers.",
    "SIM118": "`key in d.keys()` is `key in d`.",
    "SIM401": "An if/else around a dict lookup is `d.get(key, default)`.",
    "RET505": "An `else` after `return` only adds nesting: the return already left.",
    "RET506": "An `else` after `raise` only adds nesting: the raise already left.",
    "RET507": "An `else` after `continue` only adds nesting.",
    "RET508": "An `else` after `break` only adds nesting.",
    "RET504": "Assigning a value only to return it on the next line is one `return`.",
    "E711": "Compare to None with `is`/`is not`, not `==`.",
    "E712": "`x == True` is `x` (or `x is True` when the type really matters).",
    "E713": "`not x in y` is `x not in y`.",
    "F841": "A local variable assigned and never used is dead code.",
    "F401": "An import that nothing uses is dead code.",
    "S110": "`try/except: pass` swallows every error silently: log it, narrow it, or drop it.",
    "C416": "A comprehension that rebuilds its iterable unchanged is `list(x)`/`set(x)`.",
    "PIE790": "`pass` beside other statements does nothing.",
    "PLR0915": "A function with more than 50 statements does too many things.",
}


@dataclass(frozen=True, slots=True)
class RawFinding:
    rule_id: str
    line: int
    end_line: int
    message: str
    explanation: str
    fix: str | None = None  # replacement text for lines fix_start..fix_end
    fix_start: int | None = None
    fix_end: int | None = None
    fix_safe: bool = False


class RuffUnavailable(SparkError, RuntimeError):
    """ruff is not installed or could not run."""


@lru_cache(maxsize=1)
def ruff_binary() -> str:
    try:
        from ruff.__main__ import find_ruff_bin  # the wheel's own locator
    except ImportError as exc:  # pragma: no cover - ruff is a dependency
        raise RuffUnavailable("ruff is not installed (pip install ruff)") from exc
    return str(find_ruff_bin())


def _command() -> list[str]:
    return [
        ruff_binary(), "check", "--isolated", "--no-cache", "--output-format", "json",
        "--target-version", "py311", "--select", ",".join(RUFF_RULES), "--exit-zero",
    ]  # fmt: skip


def run_ruff(path: str, text: str, timeout: float = 30.0) -> list[RawFinding]:
    """Ruff's findings for `text` as if it were the file `path`."""
    cmd = [*_command(), "--stdin-filename", path or "edit.py", "-"]
    try:
        proc = subprocess.run(
            cmd, input=text, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuffUnavailable(f"ruff failed to run: {exc}") from exc
    return _findings(text, _items(proc))


def run_ruff_many(files: list[tuple[str, str]], timeout: float = 30.0) -> list[list[RawFinding]]:
    """`run_ruff(path, text)` of each (path, text), from ONE ruff process: ruff's start
    costs ~6 ms of CPU whatever it reads, and an answer's end asks for one run per edited
    file (six runs: ~40 ms of CPU and 230-330 ms of wall at load 7; one run of the six:
    ~11 ms and 20-90 ms). ruff reads files, not several stdins: each text goes to a
    private temporary folder (in memory, /dev/shm, where there is one), under its own
    numbered folder with its file's name (what ruff's rules may read of a path:
    `__init__.py`, `.pyi`), and the folder is removed at once. The findings equal
    run_ruff's (tests/core/detectors/test_ruff_batch.py); when the batch cannot run,
    each file is run alone."""
    if len(files) < 2:
        return [run_ruff(path, text, timeout) for path, text in files]
    import tempfile
    from pathlib import Path

    shm = Path("/dev/shm")
    try:
        with tempfile.TemporaryDirectory(prefix="spark-ruff-", dir=shm if shm.is_dir() else None) as tmp:
            names: list[Path] = []
            for n, (path, text) in enumerate(files):
                name = Path(tmp) / str(n) / (Path(path).name or "edit.py")
                name.parent.mkdir()
                with open(name, "w", encoding="utf-8", newline="") as out:
                    out.write(text)
                names.append(name)
            proc = subprocess.run(
                [*_command(), *map(str, names)], capture_output=True, text=True, encoding="utf-8",
                timeout=timeout, check=False)
            items = _items(proc)
    except (OSError, UnicodeError, ValueError, subprocess.TimeoutExpired, RuffUnavailable):
        return [run_ruff(path, text, timeout) for path, text in files]
    by_file: dict[str, list[dict]] = {}
    for item in items:
        by_file.setdefault(str(item.get("filename", "")), []).append(item)
    if set(by_file) - {str(name) for name in names}:  # a path ruff wrote otherwise: alone
        return [run_ruff(path, text, timeout) for path, text in files]
    return [_findings(text, by_file.get(str(name), [])) for name, (_, text) in zip(names, files, strict=True)]


def _items(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    """ruff's JSON output as a list of findings (RuffUnavailable when it failed)."""
    if proc.returncode != 0:
        raise RuffUnavailable(f"ruff exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    try:
        items = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as exc:
        raise RuffUnavailable(f"ruff printed something that is not JSON: {exc}") from exc
    if not isinstance(items, list):
        raise RuffUnavailable("ruff printed JSON that is not a list")
    return items


def _findings(text: str, items: list[dict]) -> list[RawFinding]:
    """RawFindings of ruff's JSON findings for one file's `text`."""
    lines = text.split("\n")
    out = []
    for item in items:
        code = item.get("code")
        if code not in RUFF_RULES:
            continue  # syntax errors are reported as code None: not slop
        fix, start, end, safe = _fix_of(item.get("fix"), text, lines)
        out.append(
            RawFinding(
                rule_id=code,
                line=item["location"]["row"],
                end_line=item["end_location"]["row"],
                message=item.get("message", ""),
                explanation=RUFF_RULES[code],
                fix=fix,
                fix_start=start,
                fix_end=end,
                fix_safe=safe,
            )
        )
    return out


def _offset(lines: list[str], row: int, col: int) -> int:
    """Character offset of a 1-based (row, column) location in the text."""
    return sum(len(line) + 1 for line in lines[: row - 1]) + col - 1


def _fix_of(
    fix: dict | None, text: str, lines: list[str]
) -> tuple[str | None, int | None, int | None, bool]:
    """A ruff fix as (replacement for whole lines start..end, start, end, safe)."""
    if not fix or not fix.get("edits") or fix.get("applicability") == "display-only":
        return None, None, None, False
    edits = sorted(
        fix["edits"], key=lambda e: (e["location"]["row"], e["location"]["column"]), reverse=True
    )
    fixed = text
    for edit in edits:
        a = _offset(lines, edit["location"]["row"], edit["location"]["column"])
        b = _offset(lines, edit["end_location"]["row"], edit["end_location"]["column"])
        fixed = fixed[:a] + edit["content"] + fixed[b:]
    start = min(e["location"]["row"] for e in edits)
    end = max(
        e["end_location"]["row"] - (1 if e["end_location"]["column"] == 1
                                    and e["end_location"]["row"] > e["location"]["row"] else 0)
        for e in edits
    )
    new_lines = fixed.split("\n")
    tail = len(lines) - end
    block = new_lines[start - 1 : len(new_lines) - tail]
    return "\n".join(block) + ("\n" if block else ""), start, end, fix["applicability"] == "safe"
