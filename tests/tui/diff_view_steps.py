"""What a person does to the diff view, as hypothesis steps, for the properties that compare
its kept lines with the lines drawn afresh (test_diff_view_own_lines, test_line_scrollbar):
one host, one step applier, one way to compare painted lines."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Input

from tui.widgets.diff_view import DiffView


class Host(App):
    """A diff view and an input to move the focus to."""

    def compose(self) -> ComposeResult:
        yield DiffView()
        yield Input()


def segments(lines) -> list[list[tuple]]:
    """Painted lines as comparable values: each segment's text, style and control codes."""
    return [[(seg.text, seg.style, seg.control) for seg in line] for line in lines]


async def apply_step(app: Host, pilot, hunks: list, step: str, arg) -> None:
    """One step on the host's diff view, then a frame. `hover` is the view's scrollbar's."""
    view = app.query_one(DiffView)
    if step == "sync":
        view.sync(hunks[:arg], {})
    elif step == "select":
        view.select(arg)
    elif step == "scroll":
        view.scroll_to(y=arg, animate=False)
    elif step == "focus":
        (view if arg == "diff" else app.query_one(Input)).focus()
    elif step == "resize":
        await pilot.resize_terminal(*arg)
    elif step == "theme":
        app.theme = arg
    elif step == "hover":
        view.vertical_scrollbar.mouse_over = arg
    elif step == "border":
        view.border_title = arg or None
    else:
        raise ValueError(f"unknown step {step!r}")
    await pilot.pause()
