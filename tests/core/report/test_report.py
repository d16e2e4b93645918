from __future__ import annotations

import json
import sys
import types

import pytest

from core.report.plot import BLOCKS, format_text, render_timeline
from core.report.recorder import SessionRecorder, load_events
from core.report.report import (
    FALLBACK_BASE_TOKENS_PER_S,
    BaseRates,
    base_rates,
    build_report,
    subtract,
    union,
)
from tui.cli import main as spark

BASE = BaseRates(65.0, 600.0, "test")


def record_session(root):
    """A scripted session with known timings (seconds after t=100)."""
    r = SessionRecorder(root, "demo", clock=lambda: 100.0)
    r.prompt("r1", "add a due-date filter", "spark", at=100.0)
    r.hunk_shown("h1", request_id="r1", path="invoicer/dates.py", lines=10, at=100.5)
    r.hunk_shown("h2", request_id="r1", path="invoicer/report.py", lines=4, at=100.8)
    r.hunk_shown("h1", request_id="r1", path="invoicer/dates.py", lines=12, at=100.9)  # grew
    r.answer_done("r1", profile="spark", tokens=650, elapsed_s=1.0, ttft_ms=80, chip="cs-3",
                  model="llama-3.1-8b", prompt_tokens=1000, at=101.0)
    r.hunk_decided("h1", accepted=True, dwell_s=4.5, added=8, removed=1, at=105.0)
    r.hunk_decided("h2", accepted=False, dwell_s=6.2, reason="wrong file", at=107.0)
    # two variations in parallel
    r.prompt("r2", "variation", "spark", kind="variation", at=110.0)
    r.prompt("r3", "variation", "spark", kind="variation", at=110.0)
    r.answer_done("r2", profile="spark", tokens=130, elapsed_s=0.5, at=110.5)
    r.hunk_shown("h3", request_id="r3", path="invoicer/models.py", lines=30, at=110.9)
    r.answer_done("r3", profile="spark", tokens=260, elapsed_s=1.0, at=111.0)
    r.hunk_decided("h3", accepted=True, dwell_s=0.3, unread=True, added=30, at=111.2)
    r.finding("slop", path="invoicer/models.py", detail="loop could be a comprehension",
              score=2.5, at=111.3)
    r.finding("slop", path="invoicer/models.py", detail="redundant comment", score=1.0, at=111.3)
    r.finding("duplicate", path="invoicer/models.py", detail="parse_date ~ to_date", at=111.3)
    r.finding("secret", path="invoicer/cfg.py", detail="openai line 3", at=111.3)
    r.finding("sensitive", path="auth/login.py", detail="flag", at=111.3)
    r.finding("growth", detail="grew", score=12.5, at=111.4)
    r.finding("growth", detail="grew", score=20.0, at=111.5)
    r.fresh_context(at=112.0)
    return r


def test_build_report_numbers(tmp_path):
    rec = record_session(tmp_path)
    events, _ = load_events(rec.path)
    rep = build_report(events, BASE)
    assert rep.session_id == "demo"
    assert (rep.prompts, rep.answers) == (3, 3)
    assert (rep.hunks_shown, rep.hunks_accepted, rep.hunks_rejected) == (3, 2, 1)
    assert rep.unread_accepts == 1
    assert rep.tokens == 1040 and rep.prompt_tokens == 1000
    assert rep.waiting_s == pytest.approx(2.0)  # [100,101] + [110,111] (parallel: once)
    assert rep.reviewing_s == pytest.approx(6.2)  # [101,107] + [111,111.2]
    # Base: r1 0.6 + 650/65 = 10.6; r2/r3 in parallel: max(0.6+2, 0.6+4) = 4.6
    assert rep.base_waiting_s == pytest.approx(15.2)
    assert rep.base_speedup == pytest.approx(7.6)
    assert (rep.lines_added, rep.lines_removed) == (38, 1)
    assert rep.slop_score == pytest.approx(3.5) and rep.slop_findings == 2
    assert (rep.duplicates, rep.secrets, rep.sensitive) == (1, 1, 1)
    assert rep.growth_pct == 20.0 and rep.fresh_contexts == 1
    a1 = rep.answer_list[0]
    assert (a1.request_id, a1.hunks_shown, a1.accepted, a1.rejected) == ("r1", 2, 1, 1)
    assert [s.kind for s in rep.timeline] == ["wait", "review", "wait", "review"]
    assert [x for s in rep.timeline for x in (s.start, s.end)] == pytest.approx(
        [0.0, 1.0, 1.0, 7.0, 10.0, 11.0, 11.0, 11.2])
    assert json.loads(json.dumps(rep.to_dict()))["base_speedup"] == pytest.approx(7.6)


def test_review_overlapping_a_stream_is_not_counted_twice():
    events = [
        {"t": 0.0, "type": "prompt", "request_id": "a", "text": "x"},
        {"t": 1.0, "type": "answer_done", "request_id": "a", "tokens": 10, "elapsed_s": 1.0},
        {"t": 0.5, "type": "hunk_shown", "hunk_id": "h", "request_id": "a", "lines": 3},
        {"t": 2.0, "type": "prompt", "request_id": "b", "text": "y"},
        {"t": 4.0, "type": "answer_done", "request_id": "b", "tokens": 10, "elapsed_s": 2.0},
        {"t": 5.0, "type": "hunk_decided", "hunk_id": "h", "accepted": True},
    ]
    rep = build_report(events, BASE)
    assert rep.waiting_s == pytest.approx(3.0)
    assert rep.reviewing_s == pytest.approx(2.0)  # [1,5] minus the wait [2,4]


def test_empty_and_junk_events():
    rep = build_report([], BASE)
    assert rep.prompts == 0 and rep.waiting_s == 0 and rep.base_speedup is None
    rep = build_report([{"type": "answer_done", "t": "soon", "tokens": "many"},
                        {"type": "hunk_decided", "hunk_id": "zz", "accepted": False}], BASE)
    assert rep.answers == 1 and rep.tokens == 0 and rep.hunks_rejected == 1


def test_union_and_subtract():
    assert union([(3, 4), (0, 1), (0.5, 2), (5, 5)]) == [(0, 2), (3, 4)]
    assert subtract([(0, 10)], [(2, 3), (5, 6)]) == [(0, 2), (3, 5), (6, 10)]
    assert subtract([(0, 1)], [(0, 2)]) == []


def test_base_rates_fallback_and_hwmodel(monkeypatch):
    monkeypatch.setitem(sys.modules, "hwmodel.predict", None)  # import fails
    fb = base_rates("h100-sxm", "llama-3.1-70b")
    assert fb.source == "fallback" and fb.tokens_per_s == FALLBACK_BASE_TOKENS_PER_S
    calls = []

    def predict(chip, model, *, batch=1, ctx=1024, prompt=1024, precision="bf16"):
        calls.append((chip, model, batch, prompt, precision))
        return types.SimpleNamespace(tokens_per_s_per_seq=50.0, ttft_ms=900.0)

    monkeypatch.setitem(sys.modules, "hwmodel.predict", types.SimpleNamespace(predict=predict))
    r = base_rates("h200", "llama-3.1-70b", "fp8", prompt_tokens=2000)
    assert (r.tokens_per_s, r.ttft_ms) == (50.0, 900.0) and "h200" in r.source
    assert calls == [("h200", "llama-3.1-70b", 1, 2000, "fp8")]
    assert r.seconds_for(100) == pytest.approx(2.9)


def test_timeline_plot(tmp_path):
    rep = build_report(load_events(record_session(tmp_path).path)[0], BASE)
    plot = render_timeline(rep, width=24)
    wait, review, axis = plot.splitlines()
    assert wait.startswith("waiting") and review.startswith("reviewing")
    wait_cells = wait.split("|")[1]
    review_cells = review.split("|")[1]
    assert len(wait_cells) == len(review_cells) == 24
    # session is 12 s: bins of 0.5 s; waiting fills bins 0-1 and 20-21, reviewing 2-13
    assert wait_cells[0] == wait_cells[1] == BLOCKS[8] and wait_cells[5] == " "
    assert review_cells[2:14] == BLOCKS[8] * 12 and review_cells[0] == " "
    assert axis.strip().startswith("0s") and axis.strip().endswith("12.0s")
    text = format_text(rep)
    assert "unread accepts 1" in text and "7.6x longer" in text and "secrets 1" in text


def test_cli_report_json_and_text(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setitem(sys.modules, "hwmodel.predict", None)
    monkeypatch.setenv("SPARK_DEMO_PROFILES", "1")  # a base profile exists only in the demo's profiles now
    assert spark(["report", "--root", str(tmp_path)]) == 2
    assert "no recorded sessions" in capsys.readouterr().err
    record_session(tmp_path)
    assert spark(["report", "--root", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["session_id"] == "demo" and doc["unread_accepts"] == 1
    assert doc["base_source"] == "profile 'base' rates"  # the demo's base profile: 65 tok/s
    assert spark(["report", "demo", "--root", str(tmp_path)]) == 0
    assert "waiting" in capsys.readouterr().out
    assert spark(["report", "nope", "--root", str(tmp_path)]) == 2
    assert spark(["report", "--root", str(tmp_path), "--list", "--json"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)] == ["demo"]


def test_latest_session_skips_one_that_sent_nothing(tmp_path):
    """`spark report` reads the last session that sent a prompt, not an empty reopen."""
    import os

    from core.report.recorder import SessionRecorder, find_session

    used = SessionRecorder(tmp_path, session_id="used")
    used.prompt("r1", "add a flag", "spark")
    empty = SessionRecorder(tmp_path, session_id="empty")
    os.utime(empty.path, (used.path.stat().st_mtime + 5,) * 2)
    assert find_session(tmp_path, None) == used.path


def test_an_undone_accept_no_longer_counts_and_repeated_hunk_ids_stay_apart():
    """The last word on each (answer, hunk) counts: shown, accepted and rejected add up."""
    from core.report.report import build_report

    events = [
        {"t": 1, "type": "prompt", "request_id": "a", "text": "p", "profile": "spark"},
        {"t": 2, "type": "answer_done", "request_id": "a", "tokens": 10, "elapsed_s": 1},
        {"t": 3, "type": "hunk_shown", "hunk_id": "h1", "request_id": "a"},
        {"t": 3, "type": "hunk_shown", "hunk_id": "h2", "request_id": "a"},
        {"t": 4, "type": "hunk_decided", "hunk_id": "h1", "request_id": "a", "accepted": True, "added": 3},
        {"t": 4, "type": "hunk_decided", "hunk_id": "h2", "request_id": "a", "accepted": False},
        {"t": 5, "type": "hunk_reverted", "hunk_id": "h1", "request_id": "a"},
        {"t": 6, "type": "prompt", "request_id": "b", "text": "p", "profile": "spark"},
        {"t": 7, "type": "answer_done", "request_id": "b", "tokens": 10, "elapsed_s": 1},
        {"t": 8, "type": "hunk_shown", "hunk_id": "h1", "request_id": "b"},
        {"t": 9, "type": "hunk_decided", "hunk_id": "h1", "request_id": "b", "accepted": True, "added": 3},
        {"t": 9, "type": "review", "request_id": "b", "slop_findings": 1, "added_lines": 20},
    ]
    report = build_report(events)
    assert (report.hunks_shown, report.hunks_accepted, report.hunks_rejected) == (3, 1, 1)
    assert report.hunks_accepted + report.hunks_rejected <= report.hunks_shown
    rows = {a.request_id: (a.hunks_shown, a.accepted, a.rejected) for a in report.answer_list}
    assert rows == {"a": (2, 0, 1), "b": (1, 1, 0)}
    assert report.lines_added == 3
    assert report.slop_findings == 1 and report.slop_score == 5.0  # per 100 added lines, as the status bar
