"""Real Python modules for the detectors' property tests: the installed packages and this
repository's own code, in a size window each test chooses (bigger files make slower examples)."""

from __future__ import annotations

import sysconfig
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[3]
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])


@lru_cache(maxsize=8)
def real_python_files(roots: tuple[Path, ...], min_bytes: int, max_bytes: int) -> list[Path]:
    """Every .py file under the roots whose size is within [min_bytes, max_bytes], sorted per root."""
    files = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if min_bytes <= size <= max_bytes:
                files.append(path)
    return files


def sample_modules() -> list[Path]:
    """24 real site-packages modules of 3-25 kB, spread over the sorted list: the trees the
    duplicate-check properties index (their functions get exact twins once copied)."""
    return real_python_files((SITE_PACKAGES,), 3_000, 25_000)[::97][:24]


@lru_cache(maxsize=512)
def read_text(path: Path) -> str:
    """A file's text, undecodable bytes replaced (site-packages holds a few latin-1 files)."""
    return path.read_text(encoding="utf-8", errors="replace")


def splice_donor_lines(data: st.DataObject, lines: list[str], written: list[bool], donor: list[str], *,
                       max_cut: int, max_take: int) -> None:
    """One edit drawn by hypothesis, in place: up to `max_cut` lines at a drawn place are
    replaced by up to `max_take` lines of `donor` (another real file), and `written` marks
    the lines the edit put there (the added lines a review is asked about)."""
    at = data.draw(st.integers(0, len(lines)), label="at")
    cut = data.draw(st.integers(0, max_cut), label="cut")
    d = data.draw(st.integers(0, max(0, len(donor) - 1)), label="from")
    new = donor[d:d + data.draw(st.integers(0, max_take), label="take")]
    lines[at:at + cut] = new
    written[at:at + cut] = [True] * len(new)
