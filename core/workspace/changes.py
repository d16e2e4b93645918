"""Accepted changes as transactions: journal first, then write, then (optionally) commit.

Why here and not in the edit code: the journal, the writes, the git commit and undo must
agree on one record of what changed, whichever caller (the app, `spark apply`,
`spark undo`) asked for it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from core.workspace.files import Workspace, WorkspaceError, decode, encode, fingerprint_bytes
from core.workspace.journal import FileRecord, Journal, JournalEntry, clean_temp_files


@dataclass
class ChangeResult:
    """What a change (or its undo) did."""

    change_id: str | None
    written: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    commit: str | None = None
    commit_error: str | None = None
    commit_notes: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)  # ids finished after a crash


def prepare(ws: Workspace, path: str, new_text: str, *,
            final_newline: bool | None = None) -> FileRecord:
    """The exact bytes the file has now and will have after writing new_text.

    The file keeps its encoding, newline style and final newline, except where the
    edit itself decided the final newline (a diff's `\\ No newline at end of file`):
    then `final_newline` says which, as `git apply` would write it.
    """
    ws.check_writable(path)
    before = ws.read_bytes(path)
    if before is None:
        fmt = _new_format()
        if final_newline is not None:
            fmt = dataclasses.replace(fmt, final_newline=final_newline)
        return FileRecord(path, None, encode(new_text, fmt, path), None)
    fmt = ws.file_format(path)
    if final_newline is not None:
        fmt = dataclasses.replace(fmt, final_newline=final_newline)
    after = encode(new_text, fmt, path)
    if len(after) > ws.max_bytes:
        raise WorkspaceError(f"{path}: the new content ({len(after):,} bytes) is over the "
                             f"{ws.max_bytes:,}-byte limit; refused")
    return FileRecord(path, before, after, fmt.mode)


def _new_format():
    from core.workspace.files import FileFormat

    return FileFormat()


def apply_change(ws: Workspace, records: list[FileRecord], *, message: str = "",
                 commit: bool = True, hunks: list[str] | None = None,
                 undoes: str | None = None) -> ChangeResult:
    """Journal the change, write every file atomically, then commit when in a git repo.

    The caller built `records` from what it read; a file whose bytes differ now is
    refused (never overwritten), the others are still written.
    """
    with Journal(ws).locked():
        return _apply_change(ws, records, message=message, commit=commit, hunks=hunks,
                             undoes=undoes)


def _apply_change(ws: Workspace, records: list[FileRecord], *, message: str,
                  commit: bool, hunks: list[str] | None, undoes: str | None) -> ChangeResult:
    result = ChangeResult(None, recovered=recover(ws))
    fresh: list[FileRecord] = []
    for rec in records:
        current = ws.read_bytes(rec.path)
        if current != rec.before:
            why = (f"{rec.path} changed on disk since it was read "
                   f"(fingerprint {fingerprint_bytes(current)}); not overwritten")
            result.refused.append((rec.path, why))
        elif rec.before == rec.after:
            continue
        else:
            fresh.append(rec)
    if not fresh:
        return result
    journal = Journal(ws)
    try:
        entry = journal.begin(message, fresh, undoes=undoes, hunks=hunks)
    except OSError as exc:
        why = f"the journal could not be written ({exc.strerror or exc}); nothing written"
        result.refused.extend((rec.path, f"{rec.path}: {why}") for rec in fresh)
        return result
    result.change_id = entry.id
    done: list[FileRecord] = []
    for rec in fresh:
        try:
            _write(ws, rec, rec.after)
        except (OSError, WorkspaceError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            back = _roll_back(ws, journal, entry, done)
            if back:
                result.written, result.change_id = [], None
            after = ("the whole change was rolled back, your files are as they were"
                     if back else "rolling back failed too; the journal keeps your old "
                                  "bytes and the next apply, undo or recover finishes it")
            result.refused.extend(
                (r.path, f"{r.path}: writing {rec.path} failed ({why}); {after}")
                for r in fresh)
            return result
        done.append(rec)
        result.written.append(rec.path)
    try:
        journal.mark(entry, "applied")
    except OSError:
        return result  # the files are written; recover() marks the entry later
    if commit:
        _commit(ws, journal, entry, result)
    journal.prune()
    return result


def _roll_back(ws: Workspace, journal: Journal, entry: JournalEntry,
               done: list[FileRecord]) -> bool:
    """Put back the files a failed change already wrote, then retire its journal entry.

    If even that fails (the disk is still full), the entry stays pending with the exact
    old bytes in it, and the next apply, undo or recover() finishes the job."""
    try:
        for rec in reversed(done):
            _write(ws, rec, rec.before)
        clean_temp_files(ws, [r.path for r in entry.files])
        journal.mark(entry, "rolled-back")
    except (OSError, WorkspaceError):
        return False
    return True


def _write(ws: Workspace, rec: FileRecord, data: bytes | None) -> None:
    if data is None:
        ws.delete(rec.path)
    else:
        ws.write_bytes_atomic(ws.resolve(rec.path), data, rec.mode)


def _commit(ws: Workspace, journal: Journal, entry: JournalEntry, result: ChangeResult) -> None:
    from core.workspace import git as gitmod

    if not gitmod.is_repo(ws.root):
        return
    files = [gitmod.CommitFile(f.path, f.before, f.after) for f in entry.files]
    res = gitmod.commit_change(ws.root, files, entry.message or "sparkstation: accepted edit")
    result.commit, result.commit_error = res.sha, res.error
    result.commit_notes = res.notes
    if res.sha:
        journal.mark(entry, entry.state, commit=res.sha)


def recover(ws: Workspace) -> list[str]:
    """Finish changes a crash interrupted; return their ids.

    Each file is either still at its `before` bytes (rolled forward to `after`) or
    already at `after`; a file that is neither was changed by someone else since and is
    left alone.  Stray temp files from the interrupted write are removed.
    """
    journal = Journal(ws)
    if not journal.dir.is_dir():
        return []
    with journal.locked():
        return _recover(ws, journal)


def _recover(ws: Workspace, journal: Journal) -> list[str]:
    done = []
    for entry in journal.entries():
        if entry.state not in ("pending", "undo-pending"):
            continue
        for rec in entry.files:
            try:
                current = ws.read_bytes(rec.path)
            except WorkspaceError:
                continue
            if current == rec.before and rec.before != rec.after:
                _write(ws, rec, rec.after)
        clean_temp_files(ws, [f.path for f in entry.files])
        journal.mark(entry, "applied")
        done.append(entry.id)
    return done


def undo_last(ws: Workspace, *, commit: bool = True) -> ChangeResult:
    """Revert the most recent accepted change that has not been undone.

    Only that change's files are touched.  A file still exactly as the change left it
    gets its old bytes back; one edited since gets the change's hunks reversed when their
    context still matches, otherwise it is refused with the reason.
    """
    with Journal(ws).locked():
        return _undo_last(ws, commit=commit)


def _undo_last(ws: Workspace, *, commit: bool) -> ChangeResult:
    from core.edits.hunks import apply_hunks, make_hunks, rebase_hunk

    recovered = recover(ws)
    journal = Journal(ws)
    entry = journal.last_undoable()
    if entry is None:
        return ChangeResult(None, recovered=recovered)
    records: list[FileRecord] = []
    refused: list[tuple[str, str]] = []
    for rec in entry.files:
        current = ws.read_bytes(rec.path)
        if current == rec.after:
            records.append(FileRecord(rec.path, current, rec.before, rec.mode))
            continue
        if current is None or rec.after is None or rec.before is None:
            why = (f"{rec.path} was created or deleted by the change and has been "
                   f"changed since; not undone")
            refused.append((rec.path, why))
            continue
        after_t, _ = decode(rec.after, rec.path)
        before_t, _ = decode(rec.before, rec.path)
        cur_t, fmt = decode(current, rec.path)
        lines = cur_t.splitlines(keepends=True)
        back = make_hunks(rec.path, after_t, before_t)
        moved = [rebase_hunk(h, lines) for h in back]
        if any(h is None for h in moved):
            why = (f"{rec.path} was edited after the change and the change's lines are "
                   f"no longer there; not undone")
            refused.append((rec.path, why))
            continue
        try:
            new_t = apply_hunks(cur_t, [h for h in moved if h is not None])
        except ValueError as exc:
            refused.append((rec.path, f"{rec.path}: {exc}; not undone"))
            continue
        records.append(FileRecord(rec.path, current, encode(new_t, fmt, rec.path), rec.mode))
    if not records:
        return ChangeResult(None, refused=refused, recovered=recovered)
    message = f"Undo: {entry.message}" if entry.message else "sparkstation: undo"
    result = apply_change(ws, records, message=message,
                          commit=commit and entry.commit is not None, undoes=entry.id)
    result.refused = refused + result.refused
    result.recovered = recovered
    return result
