"""The viewer as one static HTML file: the page's script and style inline, the rollouts as JSON.

The file opens from disk with no server and no network. Its Content-Security-Policy allows
nothing but the page's own script and style (by hash), so neither a reply that smuggles markup
into the data nor anything else can load or run: the data sits in a JSON block whose `<`, `>` and
`&` are escaped, and the script writes every text as text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from envtools.viewer.rollouts import FATHOM, GSM8K, summary

MAIN_SCORES = {
    FATHOM: ["reward", "format_gate", "correctness", "token_budget", "recursion_efficiency"],
    GSM8K: ["reward", "correct_answer", "length_reward"],
}
"""The scores shown first for a rollout of each environment; the rest fold under them."""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header><h1 id="title"></h1><p id="about"></p></header>
<main>
<section id="list">
<h2>At a glance</h2>
<div id="glance" class="glance"></div>
<h2>Rollouts</h2>
<div id="filters" class="filters"></div>
<table id="table"><thead></thead><tbody></tbody></table>
</section>
<section id="rollout" hidden></section>
</main>
<script id="rollouts" type="application/json">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def _asset(name: str) -> str:
    return resources.files("envtools.viewer").joinpath(name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def json_for_html(value: Any) -> str:
    """JSON that cannot end the `<script>` block it sits in or open markup inside it."""
    # ASCII: a lone surrogate a model wrote stays an escape, which the page's JSON.parse reads.
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


def _escape_html(text: str) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8")  # no lone surrogate left to encode
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(rollouts: Sequence[dict[str, Any]], *, title: str, about: str = "") -> str:
    """The page for these view rollouts (`envtools.viewer.rollouts`), numbered in order."""
    numbered = [{**r, "id": i} for i, r in enumerate(rollouts)]
    systems = _intern_system_prompts(numbered)
    data = {
        "title": title,
        "about": about,
        "main_scores": MAIN_SCORES,
        "summary": summary(numbered),
        "systems": systems,
        "rollouts": numbered,
    }
    script, style = _asset("viewer.js"), _asset("viewer.css")
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return _PAGE.format(
        policy=policy,
        title=_escape_html(title),
        style=style,
        data=json_for_html(data),
        script=script,
    )


def _intern_system_prompts(rollouts: list[dict[str, Any]]) -> list[str]:
    """Every distinct system prompt once; each rollout and sub-call keeps its index instead (a
    run repeats the same few prompts in every rollout and sub-call)."""
    index: dict[str, int] = {}

    def intern(owner: dict[str, Any]) -> dict[str, Any]:
        text = owner.get("system")
        if text is None:
            return owner
        return {**owner, "system": index.setdefault(text, len(index))}

    for i, rollout in enumerate(rollouts):
        rollouts[i] = intern(rollout)
        rollouts[i]["sub_calls"] = [intern(sub) for sub in rollout["sub_calls"]]
    return list(index)


def write(path: Path, rollouts: Sequence[dict[str, Any]], *, title: str, about: str = "") -> Path:
    """Write the page to `path` (its folder made when missing) and return the path."""
    page = render(rollouts, title=title, about=about)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside, then moved over: a failed write never leaves a broken or empty page.
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
