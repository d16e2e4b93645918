from __future__ import annotations

import json
import os

import pytest

from core.report.recorder import (
    RecorderError,
    SessionRecorder,
    _append,
    find_session,
    list_sessions,
    load_events,
)


def fake_key() -> str:
    return "sk-" + "proj-" + "Ab3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5"


def test_records_jsonl_under_spark_sessions(tmp_path):
    rec = SessionRecorder(tmp_path, "s1")
    rec.prompt("r1", "add a due-date filter", "spark", at=10.0)
    rec.answer_done("r1", profile="spark", tokens=420, elapsed_s=0.6, ttft_ms=80, chip="cs-3",
                    model="llama-3.1-8b", prompt_tokens=900, at=10.6)
    rec.hunk_shown("h1", request_id="r1", path="invoicer/dates.py", lines=12, at=10.3)
    rec.hunk_decided("h1", accepted=True, dwell_s=4.2, added=10, removed=2, at=14.5)
    rec.finding("secret", path="a.py", detail="openai at line 3")
    rec.fresh_context()
    path = tmp_path / ".spark" / "sessions" / "s1.jsonl"
    assert rec.path == path and path.is_file()
    events, bad = load_events(path)
    assert bad == 0
    assert [e["type"] for e in events] == ["session", "prompt", "answer_done", "hunk_shown",
                                           "hunk_decided", "finding", "fresh_context"]
    assert events[2]["tokens"] == 420 and events[2]["chip"] == "cs-3"
    assert events[4]["dwell_s"] == 4.2 and events[4]["unread"] is False
    # nothing else was created in the project
    assert sorted(p.name for p in tmp_path.iterdir()) == [".spark"]


def test_every_string_is_redacted(tmp_path):
    rec = SessionRecorder(tmp_path, "s2")
    key = fake_key()
    rec.prompt("r1", f"use OPENAI_API_KEY={key} please", "spark")
    rec.record("custom", nested={"list": [key], key: "x"})
    raw = rec.path.read_text()
    assert key not in raw
    assert raw.count("[REDACTED:openai]") == 3


def test_reopen_appends_without_second_header(tmp_path):
    SessionRecorder(tmp_path, "s3").prompt("a", "one", "spark")
    SessionRecorder(tmp_path, "s3").prompt("b", "two", "spark")
    events, _ = load_events(tmp_path / ".spark/sessions/s3.jsonl")
    assert [e["type"] for e in events] == ["session", "prompt", "prompt"]


def test_generated_ids_and_bad_ids(tmp_path):
    rec = SessionRecorder(tmp_path)
    assert rec.path.parent == tmp_path / ".spark" / "sessions"
    for bad in ["../../etc/passwd", "a/b", "", ".hidden", "x..y"]:
        with pytest.raises(RecorderError):
            SessionRecorder(tmp_path, bad)


def test_append_refuses_outside_spark(tmp_path):
    with pytest.raises(RecorderError):
        _append(tmp_path, tmp_path / "user_file.py", "{}")
    with pytest.raises(RecorderError):
        _append(tmp_path, tmp_path / ".spark" / ".." / "x.jsonl", "{}")
    assert not (tmp_path / "user_file.py").exists()


def test_symlinked_session_file_is_not_followed(tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_text("print('mine')\n")
    folder = tmp_path / ".spark" / "sessions"
    folder.mkdir(parents=True)
    os.symlink(victim, folder / "evil.jsonl")
    rec = SessionRecorder(tmp_path, "evil")
    rec.prompt("r", "hello", "spark")
    assert victim.read_text() == "print('mine')\n"
    assert rec.dropped >= 1 and rec.last_error


def test_write_failure_is_counted_not_raised(tmp_path):
    (tmp_path / ".spark").write_text("not a folder")  # .spark is a file: mkdir fails
    rec = SessionRecorder(tmp_path, "s4")
    rec.prompt("r", "x", "spark")
    assert rec.dropped == 2 and rec.last_error


def test_torn_last_line_is_skipped(tmp_path):
    rec = SessionRecorder(tmp_path, "s5")
    rec.prompt("r", "x", "spark")
    with open(rec.path, "a") as fh:
        fh.write('{"t": 1, "type": "answer_do')
    events, bad = load_events(rec.path)
    assert len(events) == 2 and bad == 1


def test_find_session(tmp_path):
    with pytest.raises(RecorderError, match="no recorded sessions"):
        find_session(tmp_path, None)
    a = SessionRecorder(tmp_path, "20260101-a")
    b = SessionRecorder(tmp_path, "20260102-b")
    os.utime(a.path, (1, 1))
    assert list_sessions(tmp_path) == [a.path, b.path]
    assert find_session(tmp_path, None) == b.path
    assert find_session(tmp_path, "20260101-a") == a.path
    assert find_session(tmp_path, str(a.path)) == a.path
    with pytest.raises(RecorderError, match="no session"):
        find_session(tmp_path, "nope")
    assert json.loads(a.path.read_text().splitlines()[0])["id"] == "20260101-a"


def test_batch_writes_the_same_events_with_one_append(tmp_path, monkeypatch):
    """A batch is one append of the same lines, in order, that one record each would write."""
    import core.report.recorder as recorder_module

    plain = SessionRecorder(tmp_path / "a", "s", clock=lambda: 1.0)
    batched = SessionRecorder(tmp_path / "b", "s", clock=lambda: 1.0)
    appends: list[str] = []
    real_append = recorder_module._append

    def counting(root, target, line):
        appends.append(line)
        real_append(root, target, line)

    monkeypatch.setattr(recorder_module, "_append", counting)
    for rec in (plain, batched):
        appends.clear()
        ctx = rec.batch() if rec is batched else None
        if ctx is not None:
            ctx.__enter__()
        for i in range(5):
            rec.hunk_shown(f"h{i}", request_id="r1", path="a.py", lines=i)
        with rec.batch():  # nested: joins the outer batch
            rec.finding("slop", detail=f"key {fake_key()}")
        if ctx is not None:
            assert rec.path.read_text().count("\n") == 1  # nothing written yet but the header
            ctx.__exit__(None, None, None)
            assert len(appends) == 1
        else:
            assert len(appends) == 6
    # the same lines after the header (which names each recorder's root)
    assert plain.path.read_text().split("\n")[1:] == batched.path.read_text().split("\n")[1:]
    assert fake_key() not in batched.path.read_text()


def test_batch_is_per_thread_and_failure_counts_each_event(tmp_path):
    import threading

    rec = SessionRecorder(tmp_path, "s")
    with rec.batch():
        rec.prompt("r1", "inside", "spark")
        other = threading.Thread(target=lambda: rec.prompt("r2", "other thread", "spark"))
        other.start()
        other.join()
        # the other thread's event is on disk already; this thread's waits for the batch end
        assert [e["text"] for e in load_events(rec.path)[0][1:]] == ["other thread"]
    assert [e["text"] for e in load_events(rec.path)[0][1:]] == ["other thread", "inside"]
    rec.path.unlink()
    rec.path.parent.rmdir()
    rec.path.parent.write_text("not a folder")  # every write now fails
    with rec.batch():
        rec.prompt("r3", "lost", "spark")
        rec.prompt("r4", "lost", "spark")
    assert rec.dropped == 2 and rec.last_error


def test_remembered_redaction_is_redaction(tmp_path):
    """Short strings' redaction is remembered (an answer's record repeats field names and
    kinds hundreds of times): the same result as redacting each time, secrets included."""
    from core.guards.secrets import redact
    from core.report.recorder import redact_value

    key = fake_key()
    samples = ["kind", "detail", f"token={key}", f"OPENAI_API_KEY={key}", "x " * 150 + key, "plain words"]
    for _ in range(3):
        for text in samples:
            assert redact_value(text) == redact(text)
            assert redact_value({text: [text]}) == {redact(text): [redact(text)]}
    assert key not in str(redact_value(samples))
