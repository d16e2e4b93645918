"""Every binding and screen of the workstation, driven with the pilot as a person would."""

from __future__ import annotations

import asyncio

from tests.fakes.openai_server import Reply
from tests.tui.conftest import wait_for
from tui.app import SparkApp
from tui.screens.help import HelpScreen
from tui.widgets.diff_view import DiffView

SEARCH_REPLACE = "{path}\n```python\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"


def _edit(path: str, old: str, new: str) -> str:
    return SEARCH_REPLACE.format(path=path, old=old, new=new)


MONEY_OLD = 'def format_money(amount: Decimal) -> str:\n    return f"{amount:,.2f}"\n'
MONEY_LOOP = ('def format_money(amount: Decimal) -> str:\n    text = ""\n    for ch in f"{amount:,.2f}":\n'
              '        text = text + ch\n    return text\n')
MONEY_NEG = ('def format_money(amount: Decimal) -> str:\n    if amount < 0:\n        return f"({-amount:,.2f})"\n'
             '    return f"{amount:,.2f}"\n')


async def _ready(pilot, app) -> None:
    await wait_for(pilot, lambda: app.client is not None, what="core connection")


async def _send(pilot, app, prompt: str) -> None:
    await _ready(pilot, app)
    app.query_one("#prompt").value = prompt
    await pilot.click("#prompt")
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.answer is not None and app.answer.prompt == prompt and app.settled,
                   what=f"the answer to {prompt!r}")


async def _accept_everything(pilot, app) -> None:
    while app.answer.undecided:
        await pilot.press("a")
    await wait_for(pilot, lambda: app.answer.applied, what="the write")


async def test_rejection_feedback_reaches_a_model_that_would_repeat_itself(demo_root, fake_model, fake_core_url):
    fake, _ = fake_model
    repeated = _edit("invoicer/report.py", MONEY_OLD, MONEY_LOOP)
    better = _edit("invoicer/report.py", MONEY_OLD, MONEY_NEG)

    def next_reply():  # a model that repeats itself unless told what was rejected
        last = fake.requests[-1].json["messages"]
        told = any("rejected" in m["content"].lower() and "text = text + ch" in m["content"] for m in last)
        return Reply.text(better if told else repeated)

    fake.next_reply = next_reply
    app = SparkApp(demo_root, fake_core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, "make format_money handle negative amounts")
        assert any("text + ch" in "".join(h.new_lines) for h in app.answer.hunks)
        await pilot.press("x")  # reject, saying why
        await pilot.press(*"build the string with an f-string")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.answer.applied, what="the rejection")
        await _send(pilot, app, "try again")
        assert any('({-amount:,.2f})' in "".join(h.new_lines) for h in app.answer.hunks)
    sent = "\n".join(m["content"] for m in fake.requests[-1].json["messages"])
    assert "text = text + ch" in sent and "build the string with an f-string" in sent


async def test_sensitive_path_is_flagged_and_b_reasks_base(demo_root, fake_model, fake_core_url):
    fake, _ = fake_model
    answer = "invoicer/auth/tokens.py\n```python\ndef issue_token(user):\n    return user.id\n```\n"
    fake.default = Reply.text(answer)
    app = SparkApp(demo_root, fake_core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, "add a token issuer")
        assert any(f.kind == "sensitive" for f in app.review.findings)
        await asyncio.sleep(0.5)
        await pilot.press("a")  # flagged: the first accept only warns
        assert app.answer.undecided
        await pilot.press("b")  # re-ask the deep profile
        await wait_for(pilot, lambda: app.answer.profile == "base" and app.settled, what="the base answer")
        assert app.profile == "base"
        assert not any(f.kind == "sensitive" and f.severity == "error" for f in app.review.findings)
    assert fake.requests[-1].json["model"] == "fake-model"


async def test_a_secret_in_a_hunk_needs_a_second_key(demo_root, fake_model, fake_core_url):
    fake, _ = fake_model
    key = "sk-proj-" + "Q7vT2mX9pL4kR8sW1nB6yC3dF5gH0jZa"  # built here so the tree holds no key
    fake.default = Reply.text(_edit("invoicer/__init__.py", '__version__ = "0.3.0"\n',
                                    f'__version__ = "0.3.0"\nOPENAI_API_KEY = "{key}"\n'))
    app = SparkApp(demo_root, fake_core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, "configure the api key")
        assert any(f.kind == "secret" for f in app.review.findings)
        assert "SECRET" in app.review.badges()[app.answer.hunks[0].id]
        await asyncio.sleep(0.5)
        await pilot.press("a")
        assert app.answer.undecided, "a secret is never accepted on the first key"
    assert key not in (demo_root / "invoicer" / "__init__.py").read_text()


async def test_escape_stops_the_stream_and_ctrl_l_toggles(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _ready(pilot, app)
        await pilot.press("ctrl+l")
        assert app.profile == "base" and app.query_one("#status").profile == "base"
        app.query_one("#prompt").value = "add docstrings to the report functions"
        await pilot.click("#prompt")
        await pilot.press("enter", "enter")  # second Enter: send without adding the file
        await wait_for(pilot, lambda: app.answer is not None and app.answer.stats.tokens > 5, what="tokens")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.settled, what="the stop")
        assert app.answer.reason == "cancelled"
        await pilot.press("ctrl+l")
        assert app.profile == "spark"


async def test_enter_while_streaming_steers(demo_root, tmp_path):
    from core.embedded import EmbeddedCore

    config = tmp_path / "slow.toml"  # slow enough that the redirect lands mid-answer
    config.write_text('[profiles.base]\nbackend = "replay"\npacing = "pinned"\ntokens_per_s = 25.0\nttft_ms = 50.0\n')
    core = EmbeddedCore(project_root=demo_root, config_file=config)
    url = core.start()
    try:
        app = SparkApp(demo_root, url, profile="base")
        async with app.run_test(size=(150, 44)) as pilot:
            await _ready(pilot, app)
            app.query_one("#prompt").value = "add an --unpaid-only flag to the command line"
            await pilot.click("#prompt")
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.answer is not None and app.answer.stats.tokens > 3, what="tokens")
            assert app._stream is not None and app.focused is app.query_one(DiffView)
            await pilot.press("n")  # typed at the diff: goes to the prompt as a redirect
            prompt = app.query_one("#prompt")
            assert app.focused is prompt and prompt.value == "n"
            prompt.value = "no: show negative amounts in parentheses instead"
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.settled, timeout=60, what="the steered answer")
            assert app.answer.redirects == ["no: show negative amounts in parentheses instead"]
            assert app.answer.reason == "stop"
            assert any("amount < 0" in "".join(h.new_lines) for h in app.answer.hunks)
            assert not any("--unpaid-only" in "".join(h.new_lines) for h in app.answer.hunks)
    finally:
        core.stop()


async def test_undo_fresh_context_help_and_keymap(demo_root, core_url):
    report = demo_root / "invoicer" / "report.py"
    before = report.read_text()
    app = SparkApp(demo_root, core_url, keymap={"accept": "y"})
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, "format_money should show negative amounts in parentheses")
        await asyncio.sleep(0.6)
        while app.answer.undecided:
            await pilot.press("y")  # rebound from a
        await wait_for(pilot, lambda: app.answer.applied, what="the write")
        assert report.read_text() != before
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: report.read_text() == before, what="the undo")
        assert app.station.context.history
        await pilot.press("ctrl+n")
        assert not app.station.context.history
        await pilot.press("f1")  # from the prompt (where ? is just a character)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        app.query_one(DiffView).focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "CommandPalette"


async def test_a_change_underneath_marks_the_hunk_stale_and_nothing_is_overwritten(demo_root, core_url):
    report = demo_root / "invoicer" / "report.py"
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _send(pilot, app, "format_money should show negative amounts in parentheses")
        mine = report.read_text().replace("def format_money(amount: Decimal) -> str:\n    return",
                                          "def format_money(amount: Decimal) -> str:\n    # mine\n    return")
        report.write_text(mine)  # the user edits the same lines in their editor
        await wait_for(pilot, lambda: "stale" in {s.value for s in app.answer.states().values()},
                       what="the watcher to mark the hunk stale")
        stale = next(h for h in app.answer.hunks if app.answer.state(h.id).value == "stale")
        # the state changes in the recheck's thread; the diff is drawn when it is back on the loop
        await wait_for(pilot, lambda: stale.id in app.query_one(DiffView).drawn_hunks
                                          and "[stale]" in app.query_one(DiffView).hunk_text(stale.id),
                       what="the stale hunk to be drawn")
        drawn = {h: app.query_one(DiffView).hunk_text(h) for h in app.query_one(DiffView).drawn_hunks}
        assert "[stale]" in drawn[stale.id] and "changed on disk" in drawn[stale.id], "the reason is in the diff"
        await pilot.press("A")  # accepting a stale hunk refuses it, with its reason, and writes nothing
        await wait_for(pilot, lambda: app.answer.state(stale.id).value == "refused", what="the refusal")
        await pilot.pause(0.2)
        assert not app.answer.applied and report.read_text() == mine
        assert "accepted" not in app.query_one("#status").note.replace("0 accepted", "")
        drawn = {h: app.query_one(DiffView).hunk_text(h) for h in app.query_one(DiffView).drawn_hunks}
        assert "REFUSED" in drawn[stale.id]
        await pilot.press("R")  # r / R resolve it: the answer's one decision can be written
        # the test file's new import alone may be unused: then the check before writing says so
        await wait_for(pilot, lambda: app.answer.applied or app.answer.request_id in app._check_warned,
                       what="the write or the check's warning")
        if not app.answer.applied:
            assert "w writes anyway" in app.query_one(DiffView).notes_text
            await pilot.press("w")
        await wait_for(pilot, lambda: app.answer.applied, what="the apply")
    assert report.read_text() == mine, "the user's edit survives"


async def test_an_ai_comment_in_a_watched_file_becomes_a_request(demo_root, core_url):
    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _ready(pilot, app)
        await wait_for(pilot, lambda: app.station.dups_ready, what="the index")
        dates = demo_root / "invoicer" / "report.py"
        dates.write_text(dates.read_text() + "\n# show negative amounts in parentheses AI!\n")
        await wait_for(pilot, lambda: app.answer is not None and app.settled, what="the AI! request")
        assert "AI" in app.answer.prompt and "invoicer/report.py" in [f.path for f in app.station.context.files]


async def test_variations_batch_and_report_keys(demo_root, core_url):
    from tui.screens.batch import BatchScreen
    from tui.screens.report import ReportScreen
    from tui.screens.variations import VariationsScreen

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(160, 45)) as pilot:
        await _ready(pilot, app)
        app.query_one("#prompt").value = "add an --unpaid-only flag to the command line"
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: isinstance(app.screen, VariationsScreen), what="the variations screen")
        await wait_for(pilot, lambda: app.screen.settled, timeout=20, what="every variation")
        await pilot.press("2")
        await wait_for(pilot, lambda: not isinstance(app.screen, VariationsScreen) and app.settled
                       and app.answer is not None and app.answer.hunks, what="variation 2 in the main loop")
        assert "--unpaid-only" in "".join(line for h in app.answer.hunks for line in h.new_lines)
        await pilot.press("ctrl+t")
        assert isinstance(app.screen, ReportScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: isinstance(app.screen, BatchScreen), what="the batch screen")
        await pilot.press("escape")


async def test_fuzzy_file_picker_adds_files_to_the_chat(demo_root, core_url):
    from tui.screens.file_picker import FilePickerScreen

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(150, 44)) as pilot:
        await _ready(pilot, app)
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, FilePickerScreen), what="the picker")
        await pilot.press(*"dtsp")  # fuzzy: invoicer/dates.py
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.station.context.files, what="the file in the chat")
        assert [(f.path, f.read_only) for f in app.station.context.files] == [("invoicer/dates.py", False)]
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: isinstance(app.screen, FilePickerScreen), what="the picker")
        await pilot.press("tab", *"readme", "enter")
        await wait_for(pilot, lambda: len(app.station.context.files) == 2, what="the second file")
        assert ("README.md", True) in [(f.path, f.read_only) for f in app.station.context.files]


async def test_race_from_the_app_loads_the_taken_answer_with_its_timing(demo_root, core_url):
    import json

    from tui.screens.race import RaceScreen

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(160, 45)) as pilot:
        await _ready(pilot, app)
        app.query_one("#prompt").value = "add an --unpaid-only flag to the command line"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen), what="the race")
        await wait_for(pilot, lambda: app.screen.race.lane("spark").finished, what="spark's lane")
        await pilot.press("1")
        await wait_for(pilot, lambda: not isinstance(app.screen, RaceScreen) and app.answer is not None
                       and app.settled, what="the taken answer")
        assert app.answer.origin == "taken from spark" and app.answer.hunks
        status = app.query_one("#status")
        assert status.tokens > 0 and status.ttft_ms is not None
        def events() -> list[dict]:
            return [json.loads(line) for line in app.station.recorder.path.read_text().splitlines()]

        # the record follows the screen (written once the answer is shown as settled)
        await wait_for(pilot, lambda: any(e["type"] == "answer_done" for e in events()), what="the record")
        assert any(e["type"] == "prompt" and e.get("kind") == "race" for e in events())
        assert any(e["type"] == "answer_done" and e.get("profile") == "spark" for e in events())


async def test_a_plain_folder_without_git_accepts_and_undoes_through_the_journal(tmp_path, monkeypatch):
    from core.demo import write_demo
    from core.embedded import EmbeddedCore

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    root = write_demo(tmp_path / "plain", git=False)
    assert not (root / ".git").exists()
    report = root / "invoicer" / "report.py"
    before = report.read_text()
    core = EmbeddedCore(project_root=root)
    url = core.start()
    try:
        app = SparkApp(root, url)
        async with app.run_test(size=(150, 44)) as pilot:
            await _send(pilot, app, "format_money should show negative amounts in parentheses")
            await asyncio.sleep(0.6)
            await _accept_everything(pilot, app)
            assert "({-amount:,.2f})" in report.read_text()
            await pilot.press("ctrl+z")
            await wait_for(pilot, lambda: report.read_text() == before, what="the undo from the journal")
    finally:
        core.stop()
    assert not (root / ".git").exists()
