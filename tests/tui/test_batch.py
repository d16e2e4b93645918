"""Task batches against the real embedded core and demo workspace: a queue runs in parallel,
each task with a fresh context, and the answers come back one after the other."""

from __future__ import annotations

import json


from core.batch import DONE, FAILED
from core.session import Workstation
from tests.tui.conftest import ScreenHost, wait_for
from tui.app import SparkApp
from tui.screens.batch import BatchResult, BatchScreen, current_job, open_batch

PROMPTS = ["format_money should show negative amounts in parentheses",
           "add an --unpaid-only flag to the command line"]




async def test_a_batch_of_two_completes_and_is_reviewed_in_order(client, demo_root):
    station = Workstation(demo_root)
    station.context.add(["invoicer/report.py"])
    station.context.record_exchange("an earlier prompt", "an earlier answer")
    app = ScreenHost(lambda: BatchScreen(client, PROMPTS, station, max_parallel=2))
    async with app.run_test(size=(140, 30)) as pilot:
        screen = app.screen
        job = screen.job
        await wait_for(pilot, lambda: job.finished, what="both tasks")
        await pilot.pause(0.1)
        tasks = job.run.tasks
        assert [t.status for t in tasks] == [DONE, DONE]
        # ran side by side: the second started before the first ended
        assert tasks[1].started < tasks[0].ended
        # each task had its own fresh context (the chat's files kept), not the main one
        assert tasks[0].context is not tasks[1].context
        assert all(t.context is not station.context for t in tasks)
        assert all([f.path for f in t.context.files] == ["invoicer/report.py"] for t in tasks)
        assert all(not t.context.history for t in tasks)
        assert all(job.answers[i].hunks for i in (0, 1))
        table = screen.query_one("#batch-table")
        assert table.row_count == 2
        assert "enter reviews" in str(screen.query_one("#batch-banner").render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.results, what="the first answer")
    first = app.results[0]
    assert first == BatchResult("spark", PROMPTS[0], job.answers[0].text, 0, 1)
    second = job.next_result()
    assert (second.index, second.remaining) == (1, 0)
    assert second.text == job.answers[1].text
    assert job.next_result() is None and job.to_review == 0
    events = [json.loads(line) for line in station.recorder.path.read_text().splitlines()]
    assert [e["kind"] for e in events if e["type"] == "prompt"] == ["batch", "batch"]


async def test_one_at_a_time_runs_in_queue_order(client, demo_root):
    app = ScreenHost(lambda: BatchScreen(client, PROMPTS, Workstation(demo_root), max_parallel=1))
    async with app.run_test(size=(140, 30)) as pilot:
        job = app.screen.job
        await wait_for(pilot, lambda: job.finished, what="both tasks")
        first, second = job.run.tasks
        assert second.started >= first.ended


async def test_failed_tasks_are_shown_and_skipped_in_review(client, demo_root):
    app = ScreenHost(lambda: BatchScreen(client, PROMPTS[:1], Workstation(demo_root), "nosuch"))
    async with app.run_test(size=(140, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: screen.job.finished, what="the task to fail")
        await pilot.pause(0.1)
        task = screen.job.run.tasks[0]
        assert task.status == FAILED and "nosuch" in task.error
        await pilot.press("enter")
        await pilot.pause(0.05)
        assert app.results == [] and app.screen is screen   # nothing to review
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.results, what="the screen to close")
    assert app.results == [None]


async def test_typed_queue_runs_with_ctrl_s(client, demo_root):
    app = ScreenHost(lambda: BatchScreen(client, [], Workstation(demo_root)))
    async with app.run_test(size=(140, 30)) as pilot:
        screen = app.screen
        assert screen.job is None
        area = screen.query_one("#batch-queue")
        assert app.focused is area
        await pilot.press("ctrl+s")                       # an empty queue is refused
        await pilot.pause(0.05)
        assert screen.job is None
        area.load_text(f"# two tasks\n{PROMPTS[0]}\n\n{PROMPTS[1]}")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: screen.job is not None and screen.job.finished,
                       what="the typed queue")
        assert screen.job.prompts == PROMPTS


async def test_workstation_reviews_the_batch_one_answer_after_the_other(demo_root, core_url):
    from tui.app import SparkApp

    app = SparkApp(demo_root, core_url)
    async with app.run_test(size=(140, 45)) as pilot:
        await wait_for(pilot, lambda: app.client is not None, what="core connection")
        screen = open_batch(app, PROMPTS)
        job = screen.job
        await wait_for(pilot, lambda: job.finished, what="the batch")
        for index in (0, 1):
            await wait_for(pilot, lambda: isinstance(app.screen, BatchScreen),
                           what=f"the batch screen before answer {index + 1}")
            await pilot.press("enter")
            text = job.answers[index].text
            await wait_for(pilot, lambda text=text: app.answer is not None and app.settled
                           and app.answer.text == text,
                           what=f"answer {index + 1} in the main loop")
            while app.answer.undecided:
                await pilot.press("r")
            await wait_for(pilot, lambda: app.answer.applied, what="the decisions to settle")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, BatchScreen)     # nothing left: it stays closed
        assert current_job(app) is None


def test_batch_command_rejects_bad_input(tmp_path, capsys):
    from tui.cli import main as spark_main

    assert spark_main(["batch", str(tmp_path / "nope.txt"), str(tmp_path)]) == 2
    assert "cannot read the task queue" in capsys.readouterr().err
    queue = tmp_path / "queue.txt"
    queue.write_text("# only a comment\n\n")
    assert spark_main(["batch", str(queue), str(tmp_path)]) == 2
    assert "no prompts" in capsys.readouterr().err
    queue.write_text("a task\n")
    assert spark_main(["batch", str(queue), str(tmp_path), "--max-parallel", "0"]) == 2
    assert "--max-parallel" in capsys.readouterr().err


async def test_spark_batch_opens_the_workstation_on_the_batch(demo_root, core_url, tmp_path,
                                                               monkeypatch):
    from tui import discipline_commands
    from tui.cli import main as spark_main

    queue = tmp_path / "queue.txt"
    queue.write_text("\n".join(PROMPTS) + "\n")
    opened = {}
    monkeypatch.setattr(discipline_commands, "_open",
                        lambda root, args, on_ready: opened.update(hook=on_ready))
    spark_main(["batch", str(queue), str(demo_root), "--max-parallel", "1"])
    app = SparkApp(demo_root, core_url, on_ready=opened["hook"])
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, BatchScreen), what="the batch")
        job = app.screen.job
        assert job.prompts == PROMPTS and job.run.max_parallel == 1
        await wait_for(pilot, lambda: job.finished, what="the batch to run")
