"""Write docs/results/README.md: every results page with its title and the date it was measured.

    python scripts/results_index.py

A results page starts with its title and a line saying when it was measured; this lists them,
newest first, so the folder reads as a dated log while each page stays the one place its numbers
are stated.
"""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")


def pages() -> list[tuple[str, str, str]]:
    """(date, title, path relative to the folder) of every results page."""
    found = []
    for page in sorted([*RESULTS.glob("*.md"), *RESULTS.glob("*/README.md")]):
        if page == RESULTS / "README.md":
            continue
        lines = page.read_text(encoding="utf-8").splitlines()
        title = lines[0].removeprefix("# ").strip()
        date = next((m[1] for line in lines[1:12] if (m := DATE.search(line))), "undated")
        found.append((date, title, page.relative_to(RESULTS).as_posix()))
    return sorted(found, key=lambda page: (page[0], page[2]), reverse=True)


def main() -> None:
    rows = [f"| {date} | [{title}]({path}) |" for date, title, path in pages()]
    text = "\n".join(
        [
            "# Results",
            "",
            "Every measurement of this repository, one dated page each, newest first. A page names",
            "the command that measured it, the machine and the numbers; the reference pages link",
            "here instead of repeating them. Written by `python scripts/results_index.py`.",
            "",
            "| measured | page |",
            "|---|---|",
            *rows,
            "",
        ]
    )
    (RESULTS / "README.md").write_text(text, encoding="utf-8")
    print(f"wrote {RESULTS / 'README.md'}: {len(rows)} pages")


if __name__ == "__main__":
    main()
