"""Modal screens that keep a fast typist's keys in order: the keys typed right behind the key
that opened the screen are its own, and the keys typed right behind the key that closes it act
where the focus returns.

Why they were lost. Textual gives each key the App reads to whatever is focused at that moment
(`app.focused`, else the screen), through that widget's message queue. A pushed screen is on
top of the stack at once, but its widgets are composed, mounted and focused a few loop turns
later: the keys the App read meanwhile went to the screen with nothing focused (no handler:
dropped) or, when they had followed the opening key to the review's diff, came back to the App
once the new screen was on top, whose bindings do not know a letter: dropped. "x too slow
Enter" opened "reject, say why" with an empty reason. On the way out the same: Enter and escape
are bindings, which Textual runs once the key has bubbled up to the App, by which time the keys
queued behind them had been typed into the closing screen's line and were gone with it.

The exact rule, the one PromptInput's hold and hand-over follow (tui/widgets/prompt_input.py):
keys reach a widget only through its queue, in the order the App read them, so
* while this screen has no focused widget every key comes to the screen itself (`on_key`), in
  order, and is given to its line (`take_key`); the focus moves to the line (`key_target`) only
  from inside the screen's own handling, at a moment its queue holds nothing (`_idle_queue`):
  every key read before has been taken here, every later key goes to the line, after them;
* the key that closes the screen (Enter, escape) is handled in its place among the keys (its
  binding runs there, `run_binding`, not at the App); the keys queued behind it, here and at the
  line, are kept; once none is queued the screen is popped, its result given
  (`on_close`, at once: the decision comes before the keys behind it), and the kept keys are
  given to the App as if it read them now (`App.on_event`, in order, before any key it reads
  later): each acts where the focus returned, as it would have had the user typed slowly.
The key that opens a screen runs its binding in the key's own turn when no earlier key is on its
way (tui/key_first.py NAVIGATION_ACTIONS), so the App reads the next key with the screen already
on top.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

from textual import events
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget

from tui.widgets.prompt_input import _idle_queue

ResultT = TypeVar("ResultT")


class _Settle(Message, bubble=False):
    """Posted behind the messages queued here while closing: look again whether none is left."""


def fresh_key(event: events.Key) -> events.Key:
    """A copy of `event` as the terminal's driver posts it (not forwarded, not stopped)."""
    return events.Key(event.key, event.character)


class KeyTakingScreen(ModalScreen[ResultT], Generic[ResultT]):
    """A modal screen whose keys are taken in the order pressed, in and out (module docstring).
    Subclasses say what a key does here (`take_key`) and which widget the focus moves to once
    the keys queued at the screen are taken (`key_target`; None: the screen keeps them)."""

    AUTO_FOCUS: ClassVar[str | None] = ""  # (the focus moves in _settle, when nothing is queued)

    def __init__(self, on_close: Callable[[ResultT | None], None] | None = None) -> None:
        super().__init__()
        self.on_close = on_close
        self.closing = False
        self._result: ResultT | None = None
        self._after: list[events.Key] = []  # keys typed behind the closing key
        self._settle_posted = False
        self._finished = False

    # -- subclasses ----------------------------------------------------------------------------
    def key_target(self) -> Widget | None:
        """The widget that takes the keys once nothing is queued at the screen (focused then)."""
        return None

    async def take_key(self, event: events.Key) -> None:
        """A key that reached the screen itself (nothing focused here yet)."""

    # -- keys ------------------------------------------------------------------------------------
    async def on_key(self, event: events.Key) -> None:
        if self.focused is not None and not self.closing:
            return  # (bubbled up from the focused line: Textual's way on to the App)
        event.stop()
        event.prevent_default()
        if self.closing:
            self._after.append(event)
        else:
            await self.take_key(event)
        await self.settle()

    def keep(self, event: events.Key) -> None:
        """A key that reached the line after the closing key: given back once the screen is gone."""
        event.stop()
        event.prevent_default()
        self._after.append(event)

    async def close(self, result: ResultT | None) -> None:
        """The key being handled closes the screen with `result` (module docstring)."""
        if not self.closing:
            self.closing, self._result = True, result
        await self.settle()

    def on_mount(self) -> None:
        self.post_message(_Settle())

    async def _on__settle(self, message: _Settle) -> None:
        message.stop()
        self._settle_posted = False
        await self.settle()

    def _idle_here(self) -> bool:
        """Nothing waits in this screen's queue but a _Settle (Textual's loop peeks the next
        message while it dispatches one: two _Settles would pass the turn to each other forever)."""
        return self.message_queue_size == 0 and (
            self._pending_message is None or isinstance(self._pending_message, _Settle))

    def _idle(self) -> bool:
        """No key waits at the screen (nor, when closing, at its line)."""
        target = self.key_target()
        return self._idle_here() and (not self.closing or target is None or _idle_queue(target))

    async def settle(self) -> None:
        """Close, or move the focus to the line, once no key is queued here; else look again
        after the messages queued now."""
        if self._finished or not self.is_attached:
            return
        target = self.key_target()
        if not self.closing and (target is None or self.focused is target):
            return
        if self._idle():
            if self.closing:
                await self._finish()
            elif target is not None:
                self.set_focus(target)  # at once (Widget.focus waits for a callback of the App's)
        elif self._settle_posted:
            return
        elif not self._idle_here():  # behind this screen's own messages
            self._settle_posted = True
            self.post_message(_Settle())
        else:  # the line's queue: its own loop runs it (a message posted here would not wait for
            self._settle_posted = True  # it: this loop would spin and starve the line's)
            self.set_timer(0.005, self._settle_again)

    async def _settle_again(self) -> None:
        self._settle_posted = False
        await self.settle()

    async def _finish(self) -> None:
        app = self.app
        if app.screen is not self:  # (a priority key put another screen on top: when it is gone)
            self.set_timer(0.05, self.settle)
            return
        self._finished = True
        after, self._after = self._after, []
        app.pop_screen()  # the screen below and its focus take the next key the App reads
        if self.on_close is not None:
            self.on_close(self._result)
        for event in after:  # as if the App read them now: where the focus returned, in order
            await app.on_event(fresh_key(event))
