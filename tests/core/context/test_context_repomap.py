"""The repo map: ranking by references, personalisation, budgets, file events, big trees."""

from __future__ import annotations

import os
import sysconfig
import time
from pathlib import Path

import pytest

from core.context import repomap as repomap_mod
from core.context.repomap import RepoMap
from core.context.tokens import estimate_tokens


def names(result) -> list[str]:
    return [e.definition.name for e in result.entries]


def test_referenced_definitions_outrank_unreferenced_ones(project: Path):
    m = RepoMap(project)
    ranked = [e.definition.name for e in m.rank()]
    # to_date is used by two other files, summarize by none
    assert ranked.index("to_date") < ranked.index("summarize")
    assert ranked.index("Invoice") < ranked.index("summarize")


def test_chat_files_are_left_out_and_steer_the_ranking(project: Path):
    m = RepoMap(project)
    result = m.render(400, chat_files=["app/report.py"])
    assert "app/report.py" not in result.text
    assert {"to_date", "format_date", "Invoice"} <= set(names(result))
    assert "def to_date(text: str) -> date" in result.text


def test_names_in_the_prompt_pull_their_definitions_up(project: Path):
    m = RepoMap(project)
    first = next(iter(m.rank(mentioned_names=["renderInvoice"])))
    assert first.definition.name == "renderInvoice"
    assert "function renderInvoice(invoice)" in m.render(60, prompt="fix renderInvoice").text


def test_a_method_is_shown_under_its_class(project: Path):
    text = RepoMap(project).render(1000).text
    lines = text.splitlines()
    at = lines.index("    def total_amount(self) -> Decimal")
    assert "  class Invoice" in lines[:at]
    assert "nested" not in text  # helpers inside functions are not the file's interface


@pytest.mark.parametrize("budget", [20, 50, 120, 300, 2000])
def test_render_never_exceeds_its_budget(project: Path, budget: int):
    result = RepoMap(project).render(budget)
    assert result.tokens == estimate_tokens(result.text) <= budget


def test_ignored_files_and_folders_are_not_mapped(project: Path):
    m = RepoMap(project)
    files = m.all_files()
    assert "secret.log" not in files and "build/out.py" not in files
    assert "app/dates.py" in files and "README.md" in files


def test_plain_folder_skips_build_and_dot_folders(tmp_path: Path):
    from tests.core.context.conftest import make_project

    root = make_project(tmp_path / "plain", git=False)
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "x.py").write_text("def hidden(): pass\n")
    files = RepoMap(root).all_files()
    assert "build/out.py" not in files and ".venv/lib/x.py" not in files
    assert "app/invoices.py" in files


def test_file_events_update_the_cache_without_relisting(project: Path, monkeypatch):
    m = RepoMap(project)
    assert "to_date" in names(m.render(2000))
    calls = []
    real = repomap_mod.list_files
    monkeypatch.setattr(repomap_mod, "list_files", lambda root: calls.append(root) or real(root))

    (project / "app" / "taxes.py").write_text(
        "from app.invoices import Invoice\n\ndef vat_for(invoice: Invoice) -> float:\n"
        "    return 0.2\n")
    m.on_file_event("app/taxes.py")
    assert "vat_for" in names(m.render(2000))

    dates = project / "app" / "dates.py"
    dates.write_text(dates.read_text().replace("def to_date(", "def parse_day("))
    os.utime(dates, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    m.on_file_event("app/dates.py")
    text = m.render(2000).text
    assert "parse_day" in text and "to_date" not in text

    (project / "app" / "taxes.py").unlink()
    m.on_file_event("app/taxes.py")
    assert "vat_for" not in names(m.render(2000))
    assert "app/taxes.py" not in m.all_files()
    assert calls == []  # events kept it current; the tree was never listed again


def test_events_for_new_ignored_files_are_ignored(project: Path):
    m = RepoMap(project)
    m.all_files()
    (project / "build" / "gen.py").write_text("def generated(): pass\n")
    m.on_file_event("build/gen.py")
    assert "build/gen.py" not in m.all_files()
    assert "generated" not in [e.definition.name for e in m.rank()]


def test_a_file_that_does_not_parse_still_maps(project: Path):
    (project / "app" / "broken.py").write_text("def half_done(x):\n    return (\n")
    text = RepoMap(project).render(2000).text
    assert "def half_done(x)" in text


def test_the_standard_library_maps_within_budget():
    """The 2 s target is measured by bench/bench_context.py; here a loose bound only."""
    root = Path(sysconfig.get_paths()["stdlib"])
    start = time.perf_counter()
    m = RepoMap(root)
    result = m.render(2048, prompt="json decoder scanstring")
    elapsed = time.perf_counter() - start
    assert result.files_scanned > 500
    assert 1500 < result.tokens <= 2048
    assert elapsed < 20


def test_prompt_names_leave_out_the_words_of_file_paths():
    from core.context.repomap import prompt_names

    names = prompt_names("rebase the hunk with match.py and core/edits/x.py, see to_date")
    assert {"rebase", "hunk", "to_date"} <= names
    assert not {"match", "py", "core", "edits", "x"} & names


def test_test_helpers_rank_low_unless_a_test_is_in_the_chat(project: Path):
    (project / "tests").mkdir()
    (project / "tests" / "helpers.py").write_text(
        "def make_invoice_fixture(lines):\n    return lines\n")
    for name in ("a", "b", "c"):
        (project / "tests" / f"test_{name}.py").write_text(
            "from tests.helpers import make_invoice_fixture\n\n"
            f"def test_{name}():\n    assert make_invoice_fixture([])== []\n")
    m = RepoMap(project)

    def position(chat: list[str]) -> int:
        ranked = [e.definition.name for e in m.rank(chat_files=chat)]
        return ranked.index("make_invoice_fixture")

    assert position(["tests/test_a.py"]) < position(["app/report.py"])
