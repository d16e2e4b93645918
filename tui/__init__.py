"""The Textual app: screens, widgets, key bindings. No business logic lives here.

Frames: a 1,000+ tokens/s answer changes the screen every few milliseconds, and Textual's
default 60 updates a second puts up to two frame periods between a token's arrival and the
screen (delta -> our paint -> Textual's screen update). 120 keeps the p99 of that lag under
50 ms at 5,000 tokens/s (bench/bench_tui.py). Textual only repaints what changed, so an idle
screen costs nothing; set TEXTUAL_FPS lower for a slow remote link.
"""

import os

os.environ.setdefault("TEXTUAL_FPS", "120")
