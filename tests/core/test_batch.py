from __future__ import annotations

import asyncio

import pytest

from core.batch import (
    CANCELLED,
    DONE,
    FAILED,
    BatchError,
    BatchRun,
    load_queue,
    max_parallel_for,
    parse_queue,
)


def test_parse_queue():
    text = ("# today's batch\n\nadd tests for dates.py\n  # indented comment\n"
            "rename Invoice.total to amount\nwrite a long prompt \\\n  that continues\n\n")
    assert parse_queue(text) == ["add tests for dates.py", "rename Invoice.total to amount",
                                 "write a long prompt that continues"]
    assert parse_queue("") == []


def test_load_queue_errors(tmp_path):
    with pytest.raises(BatchError, match="cannot read"):
        load_queue(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    with pytest.raises(BatchError, match="no prompts"):
        load_queue(tmp_path / "empty.txt")
    (tmp_path / "q.txt").write_text("a\nb\n")
    assert load_queue(tmp_path / "q.txt") == ["a", "b"]


def test_max_parallel_for():
    class P:
        max_parallel = 8
    assert max_parallel_for(P()) == 8 and max_parallel_for(None) == 4
    assert max_parallel_for({"max_parallel": 2}) == 2 and max_parallel_for(object(), 3) == 3
    with pytest.raises(BatchError):
        BatchRun(["a"], max_parallel=0)
    with pytest.raises(BatchError):
        BatchRun([])


async def test_parallel_limit_fresh_contexts_and_order():
    running, peak = 0, 0
    delays = [0.03, 0.01, 0.02, 0.0, 0.01, 0.02]

    async def generate(task):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        task.context.append(task.prompt)  # a shared context would collect several
        await asyncio.sleep(delays[task.index])
        running -= 1
        return f"answer {task.index}: {list(task.context)}"

    run = BatchRun([f"p{i}" for i in range(6)], max_parallel=3, context_factory=list)
    tasks = await run.run(generate)
    assert peak == 3
    assert [t.status for t in tasks] == [DONE] * 6
    assert [t.result for t in tasks] == [f"answer {i}: ['p{i}']" for i in range(6)]
    assert len({id(t.context) for t in tasks}) == 6
    assert run.finished and run.counts()["done"] == 6


async def test_failure_isolated_and_review_order():
    async def generate(task):
        if task.index == 1:
            raise RuntimeError("backend refused")
        await asyncio.sleep(0.02 if task.index == 0 else 0)
        return task.index

    updates = []
    run = BatchRun(["a", "b", "c"], max_parallel=4)
    await run.run(generate, on_update=lambda t: updates.append((t.index, t.status)))
    assert [t.status for t in run.tasks] == [DONE, FAILED, DONE]
    assert run.tasks[1].error == "RuntimeError: backend refused"
    assert (1, FAILED) in updates and (0, DONE) in updates
    order = []
    while (task := run.next_for_review()) is not None:
        order.append(task.index)
        run.mark_reviewed(task.index)
    assert order == [0, 1, 2]


async def test_review_does_not_wait_for_a_slow_task():
    gate = asyncio.Event()

    async def generate(task):
        if task.index == 0:
            await gate.wait()
        return task.index

    run = BatchRun(["slow", "fast"], max_parallel=2)
    runner = asyncio.ensure_future(run.run(generate))
    await asyncio.sleep(0.01)
    assert run.next_for_review().index == 1
    gate.set()
    await runner
    assert run.next_for_review().index == 0


async def test_cancel_stops_running_and_queued():
    started = []

    async def generate(task):
        started.append(task.index)
        await asyncio.sleep(10)

    run = BatchRun(["a", "b", "c", "d"], max_parallel=2)
    runner = asyncio.ensure_future(run.run(generate))
    await asyncio.sleep(0.01)
    run.cancel()
    await asyncio.wait_for(runner, 1.0)
    assert sorted(started) == [0, 1]
    assert [t.status for t in run.tasks] == [CANCELLED] * 4
    assert run.finished
