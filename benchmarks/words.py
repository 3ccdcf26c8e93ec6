"""Visible words per chapter: the main path a reader meets without opening a fold.

Counted in the Markdown source, outside ``???`` folds, code, math, tables, admonition-free
references and HTML; macros count as one word. Of a group of content tabs (``=== "numpy (gradlab)"``,
``=== "PyTorch"``, ...) only the first counts: the others are one click away, like a fold.
Targets (issue: "read to the end"): median <= 900, max <= 1,300. Prints a table; asserts nothing.
"""

import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pipeline import scaffold  # noqa: E402

SKIPPED_SECTIONS = ("## References", "## Run it yourself")


def visible_words(markdown: str) -> int:
    text = re.sub(r"```.*?```", " ", markdown, flags=re.S)  # code blocks
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)  # display math
    kept, folded, skipping, in_tabs = [], False, False, False
    for line in text.splitlines():
        if line.startswith("## "):
            skipping = line.startswith(SKIPPED_SECTIONS)
        if re.match(r"===\+? ", line):
            folded, in_tabs = in_tabs, True  # a later tab of the same group is folded
            continue
        if re.match(r"\?\?\?\+? ", line):
            folded = True
            continue
        if folded and (line.startswith("    ") or not line.strip()):
            continue
        if in_tabs and line.strip() and not line.startswith("    "):
            in_tabs = False
        folded = False
        if skipping or line.lstrip().startswith("|") or line.startswith("<"):
            continue
        kept.append(line)
    text = "\n".join(kept)
    text = re.sub(r"\{\{.*?\}\}", " N ", text)  # a quoted number is a word
    text = re.sub(r"\$[^$]*\$", " ", text)  # inline math
    text = re.sub(r"`[^`]*`", " ", text)  # inline code
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", text))


def main() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [p for _, p in scaffold.nav_pages(config) if p not in ("index.md", "contributing.md")]
    counts = {page: visible_words((ROOT / "docs" / page).read_text(encoding="utf-8")) for page in pages}
    for page, count in counts.items():
        print(f"{'words ' + page:<44} {count:6d}{'   over 1,300' if count > 1300 else ''}")
    values = list(counts.values())
    print(
        f"{'words: median / max':<44} {statistics.median(values):6.0f} / {max(values)}"
        "   target <= 900 / 1,300"
    )


if __name__ == "__main__":
    main()
