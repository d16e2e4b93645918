"""Which line of a model answer names a file, and which file.

Why a module of its own: a wrong guess here is a wrong write somewhere else.  A path line
that is really prose, a version pin (`pytest==7.4.3`), a URL or a template placeholder
(`path/to/file.py`, `messages/[locale]/index.json`) would create a stray file; a path
whose leading underscores were peeled off as markdown emphasis (`__init__.py` ->
`init__.py`) writes a file nobody asked for.  So every rule is conservative, and the
parser may pass `exists` (the working tree) to accept names that only the tree can
vouch for: a bare `main`, a Next.js route `app/[id]/page.tsx`, a cookiecutter folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Exists = Callable[[str], bool]

# Words that appear alone before a fence but are not file names.
NOT_PATHS = {
    "python", "py", "diff", "patch", "bash", "sh", "shell", "console", "text", "txt",
    "json", "yaml", "toml", "javascript", "js", "typescript", "ts", "rust", "go", "c",
    "cpp", "java", "html", "css", "sql", "markdown", "md", "plaintext", "udiff", "ini",
}
# Files that are commonly named with no extension.
BARE_NAMES = {"Makefile", "GNUmakefile", "makefile", "Dockerfile", "Containerfile", "LICENSE",
              "LICENCE", "COPYING", "NOTICE", "AUTHORS", "CONTRIBUTORS", "CHANGELOG", "README",
              "Procfile", "Justfile", "justfile", "Vagrantfile", "Gemfile", "Rakefile",
              "Jenkinsfile", "Pipfile", "Brewfile", "Caddyfile", "Snakefile", "CODEOWNERS",
              "Earthfile", "Tiltfile", "Podfile", "Fastfile", "Appfile", "Berksfile",
              "Guardfile", "Capfile", "Dangerfile", "Taskfile", "Cargo.lock"}
# Families: LICENSE-MIT, Dockerfile.dev, Makefile.am, requirements/... are named by prefix.
_BARE_FAMILY = re.compile(r"^(?:LICEN[CS]E|COPYING|README|CHANGELOG|NOTICE|Dockerfile|"
                          r"Containerfile|Makefile|Jenkinsfile)(?:[-_.][\w.-]+)?$")
# sentence punctuation of scripts written without spaces (a Chinese sentence that names
# README.md has no space in it, yet it is prose)
_PROSE_PUNCT = set("，。：；！？、（）【】「」『』《》…")
_DECORATION = "*`'\""  # characters models wrap a path line in (underscores: see _unwrap)
_PREFIXES = ("file:", "filename:", "path:", "file name:")
_PIN = re.compile(r"(?:===?|[<>~!]=|@\s|\[[\w,]+\][=<>~!])")  # pytest==7.4.3, pkg[x]>=1
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|www\.|mailto:)", re.IGNORECASE)
_SEGMENT_PLACEHOLDER = re.compile(r"<[^>]*>|\{[^{}]*\}|^your[_-]|^(?:\.\.\.|…)$|^\[[^\]]*\]$")
_ROUTE_DIRS = {"app", "pages", "routes", "src", "content", "api"}
_ROUTE_EXTS = {"tsx", "ts", "jsx", "js", "mjs", "astro", "svelte", "vue", "mdx", "md",
               "py", "rb", "php"}
_NUMBERED = re.compile(r"^\d{1,2}[.)]\s+")
_BRACKET_NAME = re.compile(r"\[\[?(?:\.\.\.)?[A-Za-z_][\w-]*\]?\]")


def _unwrap(s: str) -> str:
    """Peel markdown decorations: `**a.py**`, `` `a.py` ``, `"a.py"`, `a.py:`, `File: a.py`,
    nested; underscores only as a symmetric emphasis wrapper (`__a.py__`, `_a.py_`), so a
    name that starts with underscores (`__init__.py`, `_private.py`) keeps them."""
    for _ in range(5):
        before = s
        s = s.strip(_DECORATION).strip().rstrip(":：").strip()
        for prefix in _PREFIXES:
            if s.lower().startswith(prefix):
                s = s[len(prefix):].strip()
        for wrap in ("__", "_"):
            inner = s[len(wrap):-len(wrap)]
            if len(s) > 2 * len(wrap) and s.startswith(wrap) and s.endswith(wrap) \
                    and inner[:1] not in "_" and inner[-1:] not in "_" and "." in inner:
                s = inner
                break
        if s == before:
            break
    return s


def _placeholder_segment(seg: str) -> bool:
    return bool(_SEGMENT_PLACEHOLDER.search(seg)) or "..." in seg and "[..." not in seg


def _route_path(parts: list[str]) -> bool:
    """`app/[id]/page.tsx`, `src/pages/[...slug].astro`: bracket segments under a route
    folder, in a file type that frameworks route (Next, Astro, SvelteKit, Nuxt, ...)."""
    name = parts[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
    if ext not in _ROUTE_EXTS:
        return False
    first_bracket = next(i for i, p in enumerate(parts) if "[" in p)
    if any(p in _ROUTE_DIRS for p in parts[:first_bracket]):
        return all(_BRACKET_NAME.fullmatch(p.rsplit(".", 1)[0] if i == len(parts) - 1 else p)
                   or "[" not in p for i, p in enumerate(parts))
    return False


def _has(exists: Exists, s: str) -> bool:
    """exists(s), where a path the tree refuses to look at (`..`, a symlink out) is
    simply not there: the workspace refuses it again, with its reason, when applied."""
    try:
        return bool(exists(s))
    except Exception:  # noqa: BLE001 - any refusal to look means "not a known file"
        return False


def _in_tree(s: str, exists: Exists) -> str | None:
    """`s` as the tree has it: as written, or without the `path/to/` of the prompt's
    example or a doubled first folder (`sub/sub/a.py`) that models add by mistake."""
    if _has(exists, s):
        return s
    parts = s.split("/")
    if s.startswith("path/to/") and len(parts) > 2 and _has(exists, "/".join(parts[2:])):
        return "/".join(parts[2:])
    if len(parts) > 2 and parts[0] == parts[1] and _has(exists, "/".join(parts[1:])):
        return "/".join(parts[1:])
    return None


_MD_ESCAPE = re.compile(r"\\([_*\[\]()#+.!`-])")


def _backslash_readings(s: str) -> list[str]:
    """A path with backslashes, most likely reading first: markdown escapes
    (`($locale).\\_index.tsx`) when the path also has `/`, Windows separators
    (`app\\routes\\x.tsx`) when it has none."""
    unescaped = _MD_ESCAPE.sub(r"\1", s)
    windows = s.replace("\\", "/")
    both = unescaped.replace("\\", "/")
    # only a lone \_ or \* escaped (`x\_.tsx`), every other \ a folder (`pkg\__init__.py`)
    emphasis = re.sub(r"\\(\*|_(?!_))", r"\1", s).replace("\\", "/")
    order = [unescaped, both, emphasis, windows] if "/" in s else \
        [emphasis, windows, both, unescaped]
    return list(dict.fromkeys(order))


def path_problem(s: str) -> str | None:
    """Why `s` (already unwrapped) cannot be a path a model means to write, or None."""
    if _URL.match(s) or "://" in s:
        return "a URL"
    if _PIN.search(s):
        return "a version pin"
    parts = s.split("/")
    if s.startswith("path/to/") and len(parts) <= 3 or any(_placeholder_segment(p) for p in parts):
        if "[" in s and "<" not in s and "{" not in s and _route_path(parts):
            return None
        return "a template placeholder"
    if "[" in s or "]" in s:
        if _route_path(parts):
            return None
        return "a template placeholder"
    return None


def clean_path(line: str, exists: Exists | None = None) -> str | None:
    """The file name a line names, or None when the line is not just a path.

    Tolerates the decorations models add: `**foo.py**`, `` `foo.py` ``, `# foo.py`,
    `### foo.py`, `foo.py:`, `File: foo.py`.  A name with no extension and no folder is a
    path only when it is a well-known bare name (`Makefile`, `LICENSE-MIT`) or `exists`
    says the tree has it.
    """
    s = line.strip().lstrip("\ufeff")
    if not s or len(s) > 260:
        return None
    heading = s.startswith("#")
    s = s.lstrip("#").strip()
    numbered = _NUMBERED.match(s)
    if numbered and (heading or s[numbered.end():][:1] in _DECORATION):
        s = s[numbered.end():]  # "### 2. `a/b.py`", "1. **a.py**"
    s = _unwrap(s)
    if not s or any(ch.isspace() or ch in _PROSE_PUNCT for ch in s) or s.lower() in NOT_PATHS:
        return None
    if s.startswith(("<", "=", ">", "-", "+", "@", "(", "$")) \
            or s.endswith((".", ",", ";", "!", "?", ")")):
        return None
    s = s.removeprefix("./")
    if "\\" in s:
        for candidate in _backslash_readings(s):
            if exists is not None and _in_tree(candidate, exists):
                return _in_tree(candidate, exists)
        s = _backslash_readings(s)[0]
    if exists is not None:
        found = _in_tree(s, exists)
        if found:
            return found
    if path_problem(s):
        return None
    name = s.rsplit("/", 1)[-1]
    if not name:
        return None
    dotfile = name.startswith(".") and name[1:2].isalnum()
    if "." in name.strip(".") or "/" in s or dotfile or name in BARE_NAMES \
            or _BARE_FAMILY.match(name):
        return s
    return None


_BARE_TOKEN = re.compile(r"^[A-Za-z0-9_][\w.-]*$")
_LEAD_INS = {"next", "then", "also", "and", "here", "now", "finally", "first", "second",
             "third", "update", "updated", "change", "changes", "fix", "edit", "edits",
             "replace", "before", "after", "example", "result", "code", "so", "again"}


def bare_token(line: str, exists: Exists | None = None) -> str | None:
    """A lone word on a path line's spot that is not a recognisable path ("pkg",
    "utils"): the block after it is refused rather than given the previous path."""
    s = line.strip().lstrip("#").strip().strip(_DECORATION).strip()
    if s.endswith(":") and s[:-1].strip(_DECORATION).lower() in _LEAD_INS:
        return None  # "Next:" is prose leading into the block, not a file name
    s = s.rstrip(":").strip(_DECORATION)
    if not s or not _BARE_TOKEN.match(s) or s.lower() in NOT_PATHS or clean_path(s, exists):
        return None
    return s


_TICKED = re.compile(r"`([^`\s]+)`")


def mentioned_path(line: str, exists: Exists | None = None) -> str | None:
    """The one file a prose line names in backticks ("In `src/a.py`:"), else None.

    Used only to name a SEARCH block that has no path line of its own, never to start a
    whole-file edit, so prose mentioning a file cannot create one."""
    found = [p for p in (clean_path(t, exists) for t in _TICKED.findall(line)) if p]
    return found[0] if len(set(found)) == 1 else None


# -- fence language vs file type ---------------------------------------------------------
SHELL_LANGS = {"bash", "sh", "shell", "console", "zsh", "shell-session", "powershell", "ps",
               "ps1", "cmd", "bat", "terminal", "fish"}
_LANG_EXTS: dict[str, set[str]] = {
    "python": {"py", "pyi", "pyw"}, "py": {"py", "pyi"}, "python3": {"py"},
    "javascript": {"js", "mjs", "cjs", "jsx"}, "js": {"js", "mjs", "cjs", "jsx"},
    "typescript": {"ts", "tsx", "mts", "cts"}, "ts": {"ts", "tsx", "mts"},
    "tsx": {"tsx", "ts"}, "jsx": {"jsx", "js"}, "rust": {"rs"}, "go": {"go"},
    "java": {"java"}, "ruby": {"rb"}, "json": {"json", "jsonc", "json5"},
    "yaml": {"yaml", "yml"}, "yml": {"yaml", "yml"}, "toml": {"toml"},
    "html": {"html", "htm"}, "css": {"css"}, "sql": {"sql"},
}


def lang_mismatch(lang: str, path: str) -> str | None:
    """"shell" when a fence is a shell session (``` bash) under a path that is not a
    script, "mismatch" when the fence's language cannot be that file's content (``` json
    under `app.py`), else None.  Unknown languages or extensions are never a mismatch."""
    lang = lang.lower()
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
    if lang in SHELL_LANGS:
        if ext in {"sh", "bash", "zsh", "ps1", "bat", "cmd", "fish", ""} or \
                name.startswith(".") or not ext:
            return None
        known = any(ext in exts for exts in _LANG_EXTS.values())
        return "shell" if known else None
    exts = _LANG_EXTS.get(lang)
    if exts is None or not ext or not any(ext in e for e in _LANG_EXTS.values()):
        return None
    return None if ext in exts else "mismatch"
