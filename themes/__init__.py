"""sparkstation's Textual themes: one module per theme, registered here.

Textual's built-in themes (textual-dark, nord, ...) stay available beside these.
"""

from __future__ import annotations

from textual.theme import Theme

from themes import charcoal, paper, wafer

THEMES: dict[str, Theme] = {module.THEME.name: module.THEME for module in (charcoal, wafer, paper)}
DEFAULT_THEME = "charcoal"


def register_themes(app) -> None:
    """Make our themes selectable in `app` (palette, config and --theme)."""
    for theme in THEMES.values():
        app.register_theme(theme)
