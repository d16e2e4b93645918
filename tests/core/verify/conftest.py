"""Helpers for the verifier's tests: tiny projects with real pytest suites."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


@pytest.fixture
def make_tree():
    """write_tree(root, {rel: text}) -> root."""
    return write_tree


@pytest.fixture
def scratch_tmp(tmp_path, monkeypatch):
    """Shadow copies go here, so a test can see that none is left behind."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
