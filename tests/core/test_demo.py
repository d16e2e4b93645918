"""The demo project and its shipped cassettes stay in step: every recorded answer applies."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import git
import pytest

from core.demo import DemoError, write_demo
from core.edits.parser import parse_edits
from core.edits.proposal import apply_proposal, build_proposal
from core.workspace.files import Workspace

CASSETTE = Path(__file__).resolve().parents[2] / "core" / "cassettes" / "demo.jsonl"


def _recordings() -> list[dict]:
    return [json.loads(line) for line in CASSETTE.read_text().splitlines() if line.strip()]


def test_demo_is_a_committed_git_repo(tmp_path):
    root = write_demo(tmp_path / "demo")
    repo = git.Repo(root)
    assert not repo.is_dirty(untracked_files=True)
    assert "invoicer/dates.py" in repo.git.ls_files().splitlines()
    assert "def to_date" in (root / "invoicer" / "dates.py").read_text()


def test_demo_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(DemoError, match="not empty"):
        write_demo(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_demo_project_tests_pass(tmp_path):
    root = write_demo(tmp_path / "demo", git=False)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("recording", _recordings(), ids=lambda r: r["id"])
def test_every_demo_answer_applies_cleanly(tmp_path, recording):
    root = write_demo(tmp_path / "demo", git=False)
    ws = Workspace(root)
    proposal = build_proposal(ws, parse_edits(recording["answer"]))
    assert proposal.errors == []
    assert proposal.hunks
    result = apply_proposal(ws, proposal, {h.id for h in proposal.hunks})
    assert not result.refused
    # the edited demo still passes its own tests (the recordings are good answers)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, recording["id"] + "\n" + run.stdout + run.stderr


def test_the_demo_iso_answer_is_caught_as_a_copy_of_to_date(tmp_path):
    """The demo's showcase for the duplicate detector: Spark writes `parse_date` in the
    loader, a near-copy of `invoicer/dates.py:to_date` (renamed, one statement added)."""
    from core.session import AnswerRun, Workstation

    root = write_demo(tmp_path / "demo", git=False)
    station = Workstation(root)
    station.build_indexes()
    answer = next(r["answer"] for r in _recordings() if r["id"] == "iso-timestamps")
    run = AnswerRun(station.workspace, "accept ISO timestamps", "spark")
    run.feed(answer, 1)
    run.finish("stop")
    run.rebuild_proposal()
    review = station.review(run)
    dups = [f.message for f in review.findings if f.kind == "duplicate"]
    assert any("parse_date" in m and "invoicer/dates.py" in m and "to_date" in m for m in dups), dups
