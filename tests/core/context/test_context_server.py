"""End to end: the assembled request goes through the core to an OpenAI-compatible server,
which records exactly what it received (files, map, history, feedback, order)."""

from __future__ import annotations

from pathlib import Path

from core.client import CoreClient
from core.context.prompt import ChatContext
from core.edits.instructions import EDIT_FORMAT_SYSTEM_PROMPT
from tests.fakes.core import running_core
from tests.fakes.openai_server import FakeOpenAI, Reply


async def ask(client: CoreClient, ctx: ChatContext, prompt: str) -> tuple[list[dict], str]:
    messages, _ = ctx.build_request(prompt)
    stream = await client.generate("cloud", messages)
    async for _ in stream:
        pass
    assert stream.done is not None and stream.done.reason == "stop"
    ctx.record_exchange(prompt, stream.text, stream.done.usage)
    return messages, stream.text


async def test_the_endpoint_receives_files_map_history_and_feedback_in_order(
        project: Path, tmp_path: Path):
    with FakeOpenAI() as fake:
        fake.script += [Reply.text("first answer"), Reply.text("second answer"),
                        Reply.text("third answer"), Reply.text("fourth answer")]
        extra = (f'[profiles.cloud]\nbackend = "openai"\nbase_url = "{fake.url}"\n'
                 f'api_model = "m"\ncontext_window = 32000\n')
        async with running_core(tmp_path, extra=extra) as (url, _):
            client = await CoreClient.connect(url)
            try:
                ctx = ChatContext(project, 32000)
                ctx.add(["app/report.py"])
                ctx.add(["README.md"], read_only=True)
                sent1, answer1 = await ask(client, ctx, "rename to_date to parse_date")

                # the user edits the file in their editor and rejects a hunk
                (project / "app" / "report.py").write_text("def summarize():\n    return 'x'\n")
                ctx.add_rejection("app/report.py", "-old line\n+new line", "wrong name")
                sent2, _ = await ask(client, ctx, "try again")

                ctx.clear()
                sent3, _ = await ask(client, ctx, "fresh task")

                # an AI! comment written in the user's editor becomes the next request
                widget = project / "web" / "widget.js"
                widget.write_text(widget.read_text() + "// show the currency too AI!\n")
                instruction = ctx.prompt_for_ai_comments("web/widget.js")
                assert instruction is not None
                sent4, _ = await ask(client, ctx, instruction)
            finally:
                await client.close()
    received = [r.json["messages"] for r in fake.requests if r.path.endswith("chat/completions")]
    assert received == [sent1, sent2, sent3, sent4]  # what we assembled is what arrived

    first = received[0]
    assert first[0]["role"] == "system"
    assert first[0]["content"].startswith(EDIT_FORMAT_SYSTEM_PROMPT.rstrip())
    texts = [m["content"] for m in first]
    assert any("def to_date(text: str) -> date" in t for t in texts)  # the map
    assert any("# Invoicer" in t and "reference only" in t for t in texts)  # read-only file
    assert any("def summarize(invoices: list[Invoice])" in t for t in texts)  # chat file
    assert first[-1] == {"role": "user", "content": "rename to_date to parse_date"}

    second = received[1]
    roles_and_text = [(m["role"], m["content"]) for m in second]
    assert ("user", "rename to_date to parse_date") in roles_and_text
    assert ("assistant", answer1) in roles_and_text
    hist = roles_and_text.index(("assistant", answer1))
    files = next(i for i, (_, t) in enumerate(roles_and_text) if "return 'x'" in t)
    assert hist < files  # history before the current files
    assert not any("def summarize(invoices" in t for _, t in roles_and_text)  # disk content now
    assert "wrong name" in second[-1]["content"] and second[-1]["content"].endswith("try again")

    third = received[2]
    assert not any(m["content"] in (answer1, "second answer") for m in third)  # fresh context
    assert any("return 'x'" in m["content"] for m in third)  # the files were kept

    fourth = received[3]
    files_msg = next(m["content"] for m in fourth if "web/widget.js\n```" in m["content"])
    assert "// show the currency too AI!" in files_msg  # the file, with its comment, in the chat
    assert "show the currency too" in fourth[-1]["content"]
    assert "remove each `AI!` comment" in fourth[-1]["content"]
