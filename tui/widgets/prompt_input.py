"""The prompt line: Textual's Input without a whole-screen layout per value change, and with
the keys typed right after Enter kept in the order they were pressed.

Input sets its virtual size to the text's width on every change of its value (each key
typed, and the clear when a prompt is sent), and `virtual_size` is a layout reactive: each
change asked for a layout of the whole screen and a re-render of every widget whose
region it touched, 2-5 ms of the UI thread per key on the main screen, and on Enter one
more while the request was being assembled (issue 14: the thread hop back to send it
waited for that layout). For an Input of fixed size nothing else's position depends on
that width: it only bounds the horizontal scroll inside the box, which reads
`virtual_size` directly. So this Input stores the new virtual size without the layout.
An Input sized `auto` keeps the layout (its own size does depend on its text).

Enter submits in its place among the keys typed, and any other non-printable key runs its
binding there too (`run_binding`). Input's Enter is a binding, and Textual runs a widget's
bindings only once the key has bubbled up to the App, by which time the Input has already
inserted the keys queued after it: a fast typist's (or a held j's) letters after Enter were
part of the prompt sent, and Escape j j typed "jj" before the review got the focus. When
such a binding takes the focus to the review (Escape), the keys queued behind it are passed
on in order (`pass_keys`, as a hand-over below).

Keys after Enter. A 1,000 tok/s model's answer is on screen 20-300 ms after Enter, and a
user who knows it presses j at once to walk the hunks that will come. Until the answer's
first screen the app does not know yet what the Enter became (an answer, a steer, a slash
command, an offer to add the files the prompt names), so from a non-blank Enter on this
Input HOLDS every key it receives, in the order its message queue delivers them (the order
pressed: the App forwards each key to the focused widget as it reads them, and focus stays
here). The app then either `release`s them (nothing was sent: they are typed here, in
order) or `hand_over`s them to the review (the answer's first screen): each held key, and
each key still arriving here, is given to the app's `review_key` one at a time, in order, as
the focused diff would take it while an answer streams (j/k move, or say "no hunks yet";
another letter starts a redirect: the app types it here and the keys after it are typed
too). Both verdicts are messages on this widget's own queue, so every key queued before a
verdict is held, and every key queued after it is handled under it.

Why the hand-over is exact: keys reach a widget only through its message queue, in the
order the App read them, and the App forwards each key to whatever is focused when it reads
it. The focus moves to the diff only from inside this widget's own message handling, at a
moment when its queue holds no message (`_idle_queue`): every key the App gave it has been
handled here, in order, and every later key goes to the diff, after them. Until that moment
the focus stays here and the App keeps giving keys to this widget, which hands them on in
order. Nothing depends on how the loop interleaves the App's, this widget's and the
answer's tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum

from textual import events
from textual.dom import DOMNode
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

ReviewKey = Callable[[events.Key], Awaitable[None]]


class KeyState(Enum):
    """Where this Input's keys go."""

    TYPING = "typing"  # typed here (Textual's Input)
    HELD = "held"  # after a non-blank Enter: kept, in order, until the app's verdict
    HANDING = "handing"  # given to the review, one at a time, until the focus moves there


class _Release(Message, bubble=False):
    """Nothing was sent for the Enter: the held keys are typed here."""

    def __init__(self, hold: int | None) -> None:
        super().__init__()
        self.hold = hold


class _HandOver(Message, bubble=False):
    """The answer's first screen: the held keys (and those still queued here) go to the review."""

    def __init__(self, target: Widget, review_key: ReviewKey) -> None:
        super().__init__()
        self.target = target
        self.review_key = review_key


class _Drained(Message, bubble=False):
    """Posted behind the keys queued here while handing over: look again whether the queue is empty."""


async def run_binding(node: DOMNode, key: str) -> bool:
    """Run `key`'s binding as Textual would if `node` were focused and the key bubbled up to the
    App (App._check_bindings over the focus chain, the app's keymap applied; priority bindings
    are the App's own, run before any key is forwarded, so they never get here). True when a
    binding ran."""
    app = node.app
    keymap = getattr(app, "_keymap", None)
    for namespace in node.ancestors_with_self:
        bindings = namespace._bindings.copy()
        if keymap:
            bindings.apply_keymap(keymap)
        for binding in bindings.key_to_bindings.get(key, ()):
            if not binding.priority and await app.run_action(binding.action, namespace):
                return True
    return False


def _idle_queue(pump: Widget) -> bool:
    """Whether no message waits for `pump`: its queue is empty and none was taken out ahead
    (Textual's loop peeks the next message while it dispatches one, to combine them)."""
    return pump.message_queue_size == 0 and getattr(pump, "_pending_message", None) is None


class PromptInput(Input):
    """An Input whose value changes repaint it (and scroll it) without a layout pass, and which
    keeps the keys typed after Enter in order until the app says where they go."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.key_state = KeyState.TYPING
        self.holds = 0  # non-blank Enters so far: names a hold (a verdict for an old one is void)
        self._held: list[events.Key | events.Paste] = []
        self._target: Widget | None = None
        self._review_key: ReviewKey | None = None
        self._drain_posted = False
        self._in_binding = False  # a key's binding runs here (pass_keys)

    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:
            self.set_reactive(Input.virtual_size, Size(self.content_width, 1))
        super()._watch_value(value)  # sets the same size again: no refresh, no layout

    # -- the app's verdicts -----------------------------------------------------------------
    @property
    def holding(self) -> bool:
        """Keys typed after a non-blank Enter are held (the app has not said where they go)."""
        return self.key_state is KeyState.HELD

    def release(self, hold: int | None = None) -> None:
        """The Enter sent nothing (a slash command, an offer, no core): the held keys are typed
        here, in order, before any key queued after this call. `hold` (`holds` read when that
        Enter's Submitted was handled): a later Enter's hold is left alone."""
        self.post_message(_Release(hold))

    def hand_over(self, target: Widget, review_key: ReviewKey) -> None:
        """The answer's first screen: the held keys, and those queued here until the focus can
        move, go to `review_key` in order; then `target` gets the focus."""
        self.post_message(_HandOver(target, review_key))

    def pass_keys(self, target: Widget, take: ReviewKey) -> bool:
        """The key this Input is handling moved the focus to `target` (Escape: back to the
        review): the keys queued here behind it go to `take`, in order, then the focus moves (as
        `hand_over`). False, and nothing changes, when not called from inside this Input's own
        handling of a key (the caller then moves the focus itself)."""
        if not self._in_binding or self.key_state is not KeyState.TYPING:
            return False
        self.key_state = KeyState.HANDING
        self._target, self._review_key = target, take
        return True

    def stop_handing(self) -> None:
        """The review gave the keys back (a letter started a redirect, or Enter): the keys still
        queued here are typed here, and the focus stays."""
        if self.key_state is KeyState.HANDING:
            self.key_state = KeyState.TYPING
            self._target = self._review_key = None

    # -- keys --------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if self.key_state is KeyState.TYPING:
            if event.key == "enter":
                event.stop()
                event.prevent_default()  # neither Input's key handler nor its enter binding runs
                await self._submit()
            elif not event.is_printable:  # its binding in its place among the keys, as Enter:
                self._in_binding = True  # at the App it ran after the keys queued behind it were
                try:  # typed (Escape j j: "jj" typed, then the review got the focus)
                    ran = await run_binding(self, event.key)
                finally:
                    self._in_binding = False
                if ran:
                    event.stop()  # (not again at the App; Input's handler still restarts the blink)
                    self._focus_target_if_idle()
            return  # (printable keys: Input's own handler, next in the MRO)
        event.stop()
        event.prevent_default()
        await self._take(event)
        self._focus_target_if_idle()

    def _on_paste(self, event: events.Paste) -> None:
        if self.key_state is KeyState.TYPING:
            super()._on_paste(event)
            return
        event.stop()
        if self.key_state is KeyState.HELD:
            self._held.append(event)
        else:  # a paste while handing over starts the redirect, as a typed letter does
            self.stop_handing()
            super()._on_paste(event)

    async def _submit(self) -> None:
        if self.value.strip():
            self.holds += 1
            self.key_state = KeyState.HELD  # the keys after this Enter wait for the app's verdict
        await self.action_submit()

    async def _take(self, event: events.Key) -> None:
        """A key in a state other than TYPING, or one replayed from the held keys."""
        if self.key_state is KeyState.HELD:
            self._held.append(event)
        elif self.key_state is KeyState.HANDING:
            assert self._review_key is not None
            await self._review_key(event)  # may give the keys back (stop_handing)
        else:
            await self._type(event)

    async def _type(self, event: events.Key) -> None:
        """A held key typed here as it would have been when pressed: Enter submits, a printable
        key inserts, another key runs its binding (backspace, arrows, escape...) at once."""
        if event.key == "enter":
            await self._submit()
        elif event.is_printable and event.character:
            selection = self.selection
            if selection.is_empty:
                self.insert_text_at_cursor(event.character)
            else:
                self.replace(event.character, *selection)
        else:
            await run_binding(self, event.key)

    async def _replay(self) -> None:
        held, self._held = self._held, []
        for event in held:
            if isinstance(event, events.Paste):
                if self.key_state is KeyState.HELD:
                    self._held.append(event)
                else:
                    self.stop_handing()
                    super()._on_paste(event)
            else:
                await self._take(event)

    async def _on__release(self, message: _Release) -> None:
        message.stop()
        if self.key_state is KeyState.HELD and message.hold in (None, self.holds):
            self.key_state = KeyState.TYPING
            await self._replay()

    async def _on__hand_over(self, message: _HandOver) -> None:
        message.stop()
        if self.key_state is not KeyState.HELD:
            return
        self.key_state = KeyState.HANDING
        self._target, self._review_key = message.target, message.review_key
        await self._replay()
        self._focus_target_if_idle()

    def _on__drained(self, message: _Drained) -> None:
        message.stop()
        self._drain_posted = False
        self._focus_target_if_idle()

    def _focus_target_if_idle(self) -> None:
        """Move the focus to the review once no key waits here (see the module's docstring)."""
        if self.key_state is not KeyState.HANDING:
            return
        if _idle_queue(self):
            target = self._target
            self.stop_handing()
            if target is not None:  # at once: Widget.focus() would wait for a callback of the App's
                self.screen.set_focus(target)  # queue, and keys read before it would still come here
        elif not self._drain_posted:
            self._drain_posted = True
            self.post_message(_Drained())
