"""The Textual app: screens, widgets, key bindings. No business logic lives here."""
