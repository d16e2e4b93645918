"""Hand-written answers in the shapes real models write (the real-answers corpus).

The corpus (bench/real_answers, 1,697 answers from public Aider chat logs) is other
people's text and is never committed; it only runs in `make bench`.  What it taught us
is kept here instead: every shape that made the parser or the engine go wrong, or that
a fix must keep right, written anew by us (our own files, our own words) with what the
engine must do with it:

- edited: files the proposal changes (written once the user accepts);
- heavy: files the proposal changes only with the second key (`deletion_heavy`: a
  whole-file block that would cut an existing file to a snippet);
- refused: files named in an error (parser or engine), nothing proposed for them;
- held: blocks the parser keeps back with a reason (placeholder, stand-in comment);
- results: the exact new text of some edited files.
Files of the tree not listed stay as they are, and no other file may appear.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Shape:
    name: str
    seen: str  # what the corpus showed: who writes it, how often, what went wrong
    answer: str
    tree: Mapping[str, str]
    edited: frozenset[str] = frozenset()
    heavy: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    held: frozenset[str] = frozenset()
    results: Mapping[str, str] = field(default_factory=dict)


def _lines(prefix: str, n: int) -> str:
    return "".join(f"{prefix} {i}\n" for i in range(n))


BOARD_JS = """function Board(size) {
  this.size = size;
  this.points = 0;
}

Board.prototype.merge = function (tile) {
  tile.merged = true;
  // add the merged value
  this.points += tile.value;
  return tile;
};
"""

HEADER_TSX = """import {Logo} from './Logo';
import {Menu} from './Menu';

export function Header() {
  return (
    <header>
      <Logo />
      <Menu />
    </header>
  );
}
"""

CANVAS_PY = """class Canvas:
    def __init__(self):
        self.points = []

    def add(self, x, y):
        self.points.append((x, y))
"""

ORDER_ROUTE = """export default function Order() {
  return <h1>Order</h1>;
}
"""

FOOTER_TSX = """export function Footer() {
  return <footer>tide tables</footer>;
}
"""

INDEX_ROUTE = """export default function Index() {
  return <p>Welcome</p>;
}
"""

CALC_PY = """def total(xs):
    return sum(xs)
"""

SHELF_RB = "class Shelf\n" + "".join(f"  def slot_{i}\n    {i}\n  end\n\n" for i in range(15)) + "end\n"

SITE_CSS = "".join(f".row-{i} {{\n  margin: {i}px;\n}}\n" for i in range(30))

BASE_HTML = """<html>
<head><title>Tides</title></head>
<body>{% block body %}{% endblock %}</body>
</html>
"""

ORDER_PAGE = """export default function Page({params}) {
  return <div>{params.id}</div>;
}
"""

SLUG_ASTRO = """---
const {slug} = Astro.params;
---
<h1>{slug}</h1>
"""

MAKEFILE = "test:\n\tpytest -q\n"
DOCKERFILE = "FROM python:3.12-slim\nCOPY . /app\n"
MAIN_SCRIPT = "#!/bin/sh\necho start\n"

REPORT_PY = _lines("# report line", 30)


SHAPES: list[Shape] = [
    Shape(
        "original_updated_path_inside_fence",
        "Aider's 2023 transcripts (gpt-4, 39 answers): the path is the fence's first line "
        "and the markers are ORIGINAL/UPDATED; the parser found none of them at first",
        "Sure. The bonus belongs where the merged value is added, in `js/board.js`:\n\n"
        "```javascript\njs/board.js\n<<<<<<< ORIGINAL\n  // add the merged value\n"
        "  this.points += tile.value;\n=======\n  // add the merged value, doubled on a "
        "lucky roll\n  var factor = Math.random() < 0.05 ? 2 : 1;\n"
        "  this.points += tile.value * factor;\n>>>>>>> UPDATED\n```\n\n"
        "That doubles one merge in twenty.\n",
        {"js/board.js": BOARD_JS},
        edited=frozenset({"js/board.js"}),
        results={"js/board.js": BOARD_JS.replace(
            "  // add the merged value\n  this.points += tile.value;\n",
            "  // add the merged value, doubled on a lucky roll\n"
            "  var factor = Math.random() < 0.05 ? 2 : 1;\n"
            "  this.points += tile.value * factor;\n")},
    ),
    Shape(
        "source_fences",
        "31 answers (mostly Aider's diff-fenced users) wrap blocks in <source> tags "
        "instead of backticks, with the path before the tag or inside it; 16% read at first",
        "I will add a search button to the header.\n\nweb/Header.tsx\n\n<source>\n"
        "<<<<<<< SEARCH\nimport {Menu} from './Menu';\n=======\nimport {Menu} from './Menu';\n"
        "import {SearchButton} from './SearchButton';\n>>>>>>> REPLACE\n</source>\n\n"
        "And the canvas keeps vertices now:\n\n<source>python\nsrc/canvas.py\n"
        "<<<<<<< SEARCH\n        self.points = []\n=======\n        self.vertices = []\n"
        ">>>>>>> REPLACE\n</source>\n",
        {"web/Header.tsx": HEADER_TSX, "src/canvas.py": CANVAS_PY},
        edited=frozenset({"web/Header.tsx", "src/canvas.py"}),
        results={"web/Header.tsx": HEADER_TSX.replace(
            "import {Menu} from './Menu';\n",
            "import {Menu} from './Menu';\nimport {SearchButton} from './SearchButton';\n")},
    ),
    Shape(
        "second_divider_before_replace_marker",
        "23 blocks (1.7%, all Claude) close REPLACE with a second ======= right before "
        ">>>>>>> REPLACE; Aider accepts it, the parser refused the block",
        "src/canvas.py\n````python\n<<<<<<< SEARCH\n    def add(self, x, y):\n"
        "        self.points.append((x, y))\n=======\n    def add(self, x, y):\n"
        "        self.points.append((float(x), float(y)))\n=======\n>>>>>>> REPLACE\n````\n",
        {"src/canvas.py": CANVAS_PY},
        edited=frozenset({"src/canvas.py"}),
        results={"src/canvas.py": CANVAS_PY.replace("append((x, y))",
                                                    "append((float(x), float(y)))")},
    ),
    Shape(
        "windows_paths_with_markdown_escapes",
        "Aider on Windows: path lines with backslashes, and a markdown escape before '_' "
        "in a Remix route; read as folders, the route became a stray new file",
        "Two changes.\n\napp\\routes\\($lang).orders\\_.$id.tsx\n```tsx\n<<<<<<< SEARCH\n"
        "  return <h1>Order</h1>;\n=======\n  return <h1>Your order</h1>;\n>>>>>>> REPLACE\n"
        "```\n\napp\\components\\Footer.tsx\n```tsx\n<<<<<<< SEARCH\n"
        "  return <footer>tide tables</footer>;\n=======\n"
        "  return <footer>tide tables, 2026</footer>;\n>>>>>>> REPLACE\n```\n",
        {"app/routes/($lang).orders_.$id.tsx": ORDER_ROUTE,
         "app/components/Footer.tsx": FOOTER_TSX},
        edited=frozenset({"app/routes/($lang).orders_.$id.tsx", "app/components/Footer.tsx"}),
    ),
    Shape(
        "markdown_escaped_path_lines",
        "models escape underscores in bold or backticked path lines (\\_index.tsx, "
        "\\_\\_init\\_\\_.py); the escape is markdown, not part of the name",
        "**app/routes/\\_index.tsx**\n```tsx\n<<<<<<< SEARCH\n  return <p>Welcome</p>;\n"
        "=======\n  return <p>Welcome back</p>;\n>>>>>>> REPLACE\n```\n\n"
        "`tide/\\_\\_init\\_\\_.py`\n```python\n<<<<<<< SEARCH\n__version__ = \"0.1\"\n"
        "=======\n__version__ = \"0.2\"\n>>>>>>> REPLACE\n```\n",
        {"app/routes/_index.tsx": INDEX_ROUTE, "tide/__init__.py": '__version__ = "0.1"\n'},
        edited=frozenset({"app/routes/_index.tsx", "tide/__init__.py"}),
        results={"tide/__init__.py": '__version__ = "0.2"\n'},
    ),
    Shape(
        "reasoning_with_drafts",
        "13% of answers carry the model's reasoning inline (<think>, Aider's "
        "<thinking-content-...>); drafts in it were read as edits",
        "<think>\nThe user wants a mean. A first try:\n\ncalc.py\n```python\n<<<<<<< SEARCH\n"
        "    return sum(xs)\n=======\n    return sum(xs) / len(xs)\n>>>>>>> REPLACE\n```\n"
        "That fails on an empty list. Maybe the notes too:\n\nNOTES.md\n```\n# Draft\n```\n"
        "</think>\n\ncalc.py\n```python\n<<<<<<< SEARCH\n    return sum(xs)\n=======\n"
        "    return sum(xs) / len(xs) if xs else 0.0\n>>>>>>> REPLACE\n```\n",
        {"calc.py": CALC_PY},
        edited=frozenset({"calc.py"}),
        results={"calc.py": "def total(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n"},
    ),
    Shape(
        "aider_thinking_content_tag",
        "Aider logs a reasoning model's thoughts in a <thinking-content-HEX> tag",
        "<thinking-content-5e1f0a9c2b7d4e11>\nShould I rewrite calc.py whole?\n\ncalc.py\n"
        "```python\ndef total(xs):\n    pass\n```\n</thinking-content-5e1f0a9c2b7d4e11>\n\n"
        "No rewrite is needed: `total` already does what you asked.\n",
        {"calc.py": CALC_PY},
    ),
    Shape(
        "example_snippet_under_a_heading",
        "deepseek-coder (Aider's diff format, Aider applied nothing): an illustration "
        "under a `### path` heading would have replaced a 231-line file with 3 lines",
        "Here is an example of how you might lay out the class:\n\n### shelf.rb\n```ruby\n"
        "class Shelf\n  # Class definition here\nend\n```\n\nThen add the methods you need.\n",
        {"shelf.rb": SHELF_RB},
        held=frozenset({"shelf.rb"}),
    ),
    Shape(
        "placeholder_whole_files_and_paths",
        "whole files that are only a stand-in (`// entire file content here`, which "
        "Aider wrote into a C++ project, `[Contents of App.tsx go here]`) and template "
        "paths (`src/<module>.py`, `messages/[locale]/...` absent from the tree)",
        "src/main.cpp\n```cpp\n// entire file content here\n```\n\nsrc/App.tsx\n```tsx\n"
        "[Contents of App.tsx go here]\n```\n\nFor each new module create:\n\n"
        "src/<module>.py\n```python\ndef run():\n    pass\n```\n\n"
        "messages/[locale]/common.json\n```json\n{\"title\": \"Tides\"}\n```\n",
        {"src/main.cpp": "int main() {\n  return 0;\n}\n",
         "src/App.tsx": "export const App = () => null;\n"},
        held=frozenset({"src/main.cpp", "src/App.tsx"}),
    ),
    Shape(
        "whole_file_that_cuts_an_existing_file",
        "13 answers (grok, qwen, deepseek; whole-file formats) replace a long file with "
        "a short one (965 -> 13 lines, 796 -> 33): only the second key may write it",
        "Replace the stylesheet with this simpler one:\n\nstatic/site.css\n```css\n"
        ".row {\n  margin: 4px;\n}\n```\n\nand load it in the base template:\n\n"
        "templates/base.html\n```html\n<<<<<<< SEARCH\n<head><title>Tides</title></head>\n"
        "=======\n<head><title>Tides</title><link rel=\"stylesheet\" href=\"/static/site.css\">"
        "</head>\n>>>>>>> REPLACE\n```\n",
        {"static/site.css": SITE_CSS, "templates/base.html": BASE_HTML},
        edited=frozenset({"templates/base.html"}),
        heavy=frozenset({"static/site.css"}),
    ),
    Shape(
        "bracketed_route_files",
        "Next.js / Astro route files (`[id]/page.tsx`, `[...slug].astro`) that the tree "
        "has are real paths; they were once counted as placeholders",
        "app/orders/[id]/page.tsx\n```tsx\n<<<<<<< SEARCH\n  return <div>{params.id}</div>;\n"
        "=======\n  return <div>Order {params.id}</div>;\n>>>>>>> REPLACE\n```\n\n"
        "src/pages/blog/[...slug].astro\n```astro\n---\nconst {slug} = Astro.params;\n"
        "const title = slug.replaceAll('-', ' ');\n---\n<h1>{title}</h1>\n```\n",
        {"app/orders/[id]/page.tsx": ORDER_PAGE, "src/pages/blog/[...slug].astro": SLUG_ASTRO},
        edited=frozenset({"app/orders/[id]/page.tsx", "src/pages/blog/[...slug].astro"}),
        results={"src/pages/blog/[...slug].astro":
                 "---\nconst {slug} = Astro.params;\nconst title = slug.replaceAll('-', ' ');"
                 "\n---\n<h1>{title}</h1>\n"},
    ),
    Shape(
        "pins_and_urls_are_never_paths",
        "a pin (`httpx==0.27.2`) or a URL on the line before a fence is no file name; "
        "the pins inside a requirements file are its content",
        "Pin the client:\n\nhttpx==0.27.2\n```\nhttpx==0.27.2\n```\n\nThe guide at\n"
        "https://example.org/tides/setup.py\n```python\nsetup(name='tides')\n```\n"
        "shows the packaging. The full file:\n\nrequirements.txt\n```\nflask==3.0.3\n"
        "httpx==0.27.2\n```\n",
        {"requirements.txt": "flask==3.0.3\n"},
        edited=frozenset({"requirements.txt"}),
        results={"requirements.txt": "flask==3.0.3\nhttpx==0.27.2\n"},
    ),
    Shape(
        "bare_file_names",
        "Makefile, Dockerfile and extensionless scripts (`main`) are paths: well-known "
        "names always, other bare names when the tree has them",
        "Makefile\n```make\n<<<<<<< SEARCH\n\tpytest -q\n=======\n\tpytest -q -x\n"
        ">>>>>>> REPLACE\n```\n\nDockerfile\n```dockerfile\nFROM python:3.12-slim\n"
        "WORKDIR /app\nCOPY . /app\n```\n\nmain\n```sh\n<<<<<<< SEARCH\necho start\n=======\n"
        "echo starting\n>>>>>>> REPLACE\n```\n",
        {"Makefile": MAKEFILE, "Dockerfile": DOCKERFILE, "main": MAIN_SCRIPT},
        edited=frozenset({"Makefile", "Dockerfile", "main"}),
        results={"Makefile": "test:\n\tpytest -q -x\n", "main": "#!/bin/sh\necho starting\n"},
    ),
    Shape(
        "search_not_in_the_file",
        "a SEARCH that the file does not hold (the model misremembers it): refused with "
        "a reason, the answer's other files still proposed",
        "calc.py\n```python\n<<<<<<< SEARCH\ndef total(values):\n    return sum(values)\n"
        "=======\ndef total(values):\n    return float(sum(values))\n>>>>>>> REPLACE\n```\n\n"
        "src/canvas.py\n```python\n<<<<<<< SEARCH\nclass Canvas:\n=======\n"
        "class Canvas:  # 2-D only\n>>>>>>> REPLACE\n```\n",
        {"calc.py": CALC_PY, "src/canvas.py": CANVAS_PY},
        edited=frozenset({"src/canvas.py"}),
        refused=frozenset({"calc.py"}),
    ),
    Shape(
        "empty_search_over_an_existing_file",
        "replay: an empty SEARCH meant to append to a file that exists and is not empty; "
        "Aider prepends or appends, our engine refuses rather than guess",
        "config.yaml\n```yaml\n<<<<<<< SEARCH\n=======\nretries: 3\n>>>>>>> REPLACE\n```\n",
        {"config.yaml": "timeout: 10\n"},
        refused=frozenset({"config.yaml"}),
    ),
    Shape(
        "absolute_path_of_the_users_folder",
        "replay: the model repeats the user's folder (`D:/work/...`); the workspace "
        "refuses absolute paths",
        "D:/work/tides/README.md\n```markdown\n<<<<<<< SEARCH\n# Tides\n=======\n"
        "# Tides\n\nTide tables for the coast.\n>>>>>>> REPLACE\n```\n",
        {"README.md": "# Tides\n"},
        refused=frozenset({"D:/work/tides/README.md"}),
    ),
    Shape(
        "whole_file_cut_off_mid_stream",
        "whole files that stop mid-stream (no closing fence, the model ran out of "
        "tokens): Aider wrote them truncated, we refuse them",
        "src/report.py\n```python\n" + REPORT_PY[: len(REPORT_PY) // 2],
        {"src/report.py": REPORT_PY},
        refused=frozenset({"src/report.py"}),
    ),
    Shape(
        "quoted_existing_file_is_no_change",
        "an answer that quotes a file it was given (\"From the provided files:\") reads "
        "as a whole file; exact, it changes nothing",
        "From the provided files:\n\ncalc.py\n```python\n" + CALC_PY + "```\n\n"
        "`total` already sums the list.\n",
        {"calc.py": CALC_PY},
    ),
    Shape(
        "unified_diff",
        "9 answers in Aider's udiff format: a diff fence with ---/+++ headers",
        "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def total(xs):\n"
        "-    return sum(xs)\n+    return sum(xs, 0)\n```\n",
        {"calc.py": CALC_PY},
        edited=frozenset({"calc.py"}),
        results={"calc.py": "def total(xs):\n    return sum(xs, 0)\n"},
    ),
]
