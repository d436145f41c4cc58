"""A static HTML viewer of rollouts: open it from disk, in any browser, with no server.

    uv run python -m envtools.viewer outputs/eval                    # an evaluation's transcripts
    uv run python -m envtools.viewer results.jsonl --out run.html    # vf-eval -s, TRL, OpenEnv

`fathom_lab.evaluate` writes `viewer.html` beside its report. `rollouts` reads every saved form
into the page's shape, `files` reads them from disk, `page` writes the page and `browser` drives
a headless Chromium to look at it.
"""

from envtools.viewer.files import load
from envtools.viewer.page import render, write
from envtools.viewer.rollouts import READERS, sniff

VIEWER_NAME = "viewer.html"

__all__ = ["READERS", "VIEWER_NAME", "load", "render", "sniff", "write"]
