"""Session recording (JSONL under `.spark/sessions/`) and the report built from it."""
