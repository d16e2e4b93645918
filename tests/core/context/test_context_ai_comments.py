"""AI! / AI? comments in watched files."""

from __future__ import annotations

from core.context.ai_comments import (
    AIComment,
    AICommentTracker,
    ai_comment_prompt,
    find_ai_comments,
)

SOURCE = """\
import os
url = "http://example.com/AI!"  # a string, and this comment is not marked
# the loop below is slow.
# use a dict instead of the list AI!
def f(x):  # what does x mean? ai?
    return x  // AI! swap these
/* make it const AI! */
<!-- AI? why is this here -->
-- AI! rename the column
x = 1  # said AI
y = 2  # MAIL!
"""


def test_finds_marked_comments_in_many_comment_styles():
    found = find_ai_comments("notes", SOURCE)  # no extension: every common style counts
    assert found == [
        AIComment("notes", 4, "the loop below is slow. use a dict instead of the list", "!"),
        AIComment("notes", 5, "what does x mean?", "?"),
        AIComment("notes", 6, "swap these", "!"),
        AIComment("notes", 7, "make it const", "!"),
        AIComment("notes", 8, "why is this here", "?"),
        AIComment("notes", 9, "rename the column", "!"),
    ]


def test_comment_style_follows_the_file_type():
    py = "x = 5 % 3  # keep it small AI!\ny = a // b  # floor AI?\n"
    assert [(c.line, c.text) for c in find_ai_comments("m.py", py)] == [
        (1, "keep it small"), (2, "floor")]
    js = "const r = a - -b // negate AI!\n# not a comment in js AI!\n"
    assert [(c.line, c.text) for c in find_ai_comments("web/app.js", js)] == [(1, "negate")]
    sql = "SELECT 1 -- count rows AI!\n"
    assert [c.text for c in find_ai_comments("q.sql", sql)] == ["count rows"]


def test_unmarked_files_have_none():
    assert find_ai_comments("b.py", "x = 1  # fine\n# AI is cool\n# trAI!\n") == []


def test_prompt_asks_for_the_change_and_the_removal_of_the_comment():
    comments = find_ai_comments("notes", SOURCE)
    prompt = ai_comment_prompt("notes", comments)
    assert "line 4: the loop below is slow" in prompt
    assert "remove each `AI!` comment" in prompt
    assert "line 5: what does x mean?" in prompt and "Answer them" in prompt


def test_question_only_prompt_does_not_ask_for_edits():
    prompt = ai_comment_prompt("b.py", find_ai_comments("b.py", "# is this thread-safe? AI?\n"))
    assert "Do not edit any file" in prompt and "AI!" not in prompt


def test_tracker_fires_once_per_new_instruction():
    tracker = AICommentTracker()
    text = "x = 1\n# add a docstring AI!\n"
    assert [c.text for c in tracker.new_comments("a.py", text)] == ["add a docstring"]
    assert tracker.new_comments("a.py", text + "y = 2\n") == []  # saved again: same comment
    assert tracker.new_comments("a.py", "x = 1\n") == []  # the accepted edit removed it
    again = tracker.new_comments("a.py", "x = 1\n# add a docstring AI!\n")
    assert len(again) == 1  # written anew: a new request
