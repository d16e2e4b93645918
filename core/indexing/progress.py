"""Progress bars for the CLI's long scans (`spark dups scan`, the repo map), via rich.

Shown on stderr and only when stderr is a terminal, so piped and `--json` output stays
clean. The callback takes (done, total) as `DuplicateIndex.build` and `RepoMap.refresh`
report them, and redraws at most ~10 times a second (rich's own refresh), so calling it
per file costs next to nothing.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

Callback = Callable[[int, int], None]


@contextlib.contextmanager
def progress_bar(label: str, *, enabled: bool | None = None) -> Iterator[Callback]:
    """A (done, total) callback that drives a rich progress bar while the block runs."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
