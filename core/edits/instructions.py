"""The edit-format rules sent to real models as (part of) the system prompt.

Why SEARCH/REPLACE: it needs no line numbers (which fast models get wrong), it is easy
to stream and to show live, and an exact copy of existing lines can be located without
ambiguity.  The parser also accepts unified diffs and whole files, but we ask for one
format so answers are predictable.  Rules 10 and 11 come from real answers (Aider chat
logs, bench/real_answers): an example fenced under a path line reads as that file's new
content, and renames or deletions in a diff can only be refused.
"""

EDIT_FORMAT_SYSTEM_PROMPT = """\
When you change files, answer with SEARCH/REPLACE blocks and nothing else for the code.

Every block has this form:

path/to/file.py
```python
<<<<<<< SEARCH
exact existing lines to find
=======
the lines to put in their place
>>>>>>> REPLACE
```

Rules:
1. The first line is the file's path relative to the project root, alone on its line,
   with no quotes, bold or other decoration. Repeat it before every block.
2. The SEARCH part must copy the existing lines EXACTLY, character for character,
   including indentation, comments and blank lines. Never abbreviate with "..." .
3. Include just enough lines in SEARCH to match ONE place in the file: usually the
   lines you change plus one or two unchanged lines around them. Keep blocks small.
4. Several changes to one file: several blocks, in the order they appear in the file.
   Do not let two blocks overlap.
5. To create a new file, use an empty SEARCH part and put the whole file in REPLACE.
   An empty SEARCH on a file that already has content is refused.
6. To delete code, leave the REPLACE part empty. REPLACE holds the complete new lines:
   never stand in for code with comments like "# ... existing code ...".
7. To move code, use one block to delete it and another to insert it.
8. Only edit files the user has shown you or asked you to create.
9. Keep any explanation short and outside the blocks.
10. A path line is only for a block you want applied. To show an example or quote
    existing code, use a fence with no path line before it.
11. Blocks cannot rename or delete files: say so in a sentence and the user will do it.
"""
