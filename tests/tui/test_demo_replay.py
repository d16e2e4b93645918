"""The demo's replay answers what the user typed, also after a rejection with feedback."""

from __future__ import annotations

from tests.tui.conftest import wait_for
from tui.app import SparkApp

FIRST = "format_money should show negative amounts in parentheses like accountants do"
SECOND = "Add docstrings to the functions"


async def _send(pilot, app, prompt: str) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")
    app.query_one("#prompt").value = prompt
    await pilot.click("#prompt")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.answer is not None and app.answer.prompt == prompt
                   and app.settled, what=f"the answer to {prompt!r}")


async def test_after_a_rejection_the_next_prompt_replays_its_own_recording(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, FIRST)
        assert app.answer.source["id"] == "negative-money"
        await pilot.press("x")  # reject, saying why: the feedback goes in front of the next prompt
        await pilot.press(*"negative amounts keep the minus sign, no parentheses in format_money")
        await pilot.press("enter")
        if not app.answer.applied:
            await pilot.press("R")  # the answer's other hunks
        await wait_for(pilot, lambda: app.answer.applied, what="the rejection")
        await _send(pilot, app, SECOND)
        assert app.answer.source["id"] == "docstrings", app.answer.source


async def test_the_demo_lists_its_recorded_prompts_first(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await pilot.pause()
        notes = app.query_one("DiffView").notes_text  # type: ignore[attr-defined]
    assert "answers are recordings" in notes
    assert "Add docstrings to the functions in report.py" in notes


async def test_a_mentioned_file_is_added_and_sent_unless_turned_off(demo_root, core_url):
    prompt = "Add docstrings to the functions in report.py"
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, prompt)  # one Enter: added and sent
        assert [f.path for f in app.station.context.files] == ["invoicer/report.py"]
        assert app.answer.source["id"] == "docstrings"
    (demo_root / ".spark.toml").write_text("[ui]\nadd_mentioned = false\n")
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        app.query_one("#prompt").value = prompt
        await pilot.click("#prompt")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.answer is None  # turned off: the first Enter only offers the file
        await pilot.press("enter")  # the second sends as typed
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the answer")
        assert app.station.context.files == []


async def test_the_toggle_cycles_any_profiles(tmp_path, monkeypatch):
    """Profiles not called spark/base (a user's own, two models of one server) toggle too."""
    from core.embedded import EmbeddedCore
    from tests.fakes.core import TEST_CASSETTES

    monkeypatch.setenv("SPARK_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    project = tmp_path / "p"
    project.mkdir()
    (project / ".spark.toml").write_text("".join(
        f'[profiles.{name}]\nbackend = "replay"\npacing = "pinned"\ntokens_per_s = 5000.0\n'
        f'cassettes = ["{TEST_CASSETTES.as_posix()}"]\n' for name in ("local", "work")))
    core = EmbeddedCore(project_root=project)
    try:
        app = SparkApp(project, core.start(), profile="local")
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.client is not None, what="core connection")
            await pilot.press("ctrl+l")
            assert app.profile == "work"
            await pilot.press("ctrl+l")
            assert app.profile == "local"
    finally:
        core.stop()
