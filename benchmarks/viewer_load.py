"""How large the rollout viewer of a long run is, and how fast it opens in a real browser.

Usage: uv run python benchmarks/viewer_load.py [--n 50] [--doc-tokens 200000] [--loads 5]
           [--out docs/results/viewer-load.md] [--screenshots docs/assets]

Runs `fathom_lab.evaluate` with the honest reference on `--n` eval rows at `--doc-tokens` (its
viewer.html is the page measured), then opens the page `--loads` times in headless Chromium, each
a fresh navigation, and takes from the page's own clock (`performance.now()`) the time until the
list is drawn; then the time to draw the largest rollout. The baseline, opened the same way in the
same browser, is a page of the same kind with no rollout in it, so the difference is what the
rollouts cost. Medians, with the minimum and maximum. With `--screenshots`, it also runs the
default evaluation (every scripted policy, 36 rows at 16K tokens) and photographs its viewer:
the list, and a reference rollout with a sub-call opened. The results page is written to `--out`.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fathom_lab import evaluate

from envtools import cli, viewer
from envtools.measured import measured_by
from envtools.viewer.browser import Chromium

COMMAND = "uv run python benchmarks/viewer_load.py"


def quietly(command: Callable[[list[str]], int], argv: list[str]) -> int:
    """Run a command's main with its report kept off this command's output."""
    with contextlib.redirect_stdout(io.StringIO()):
        return command(argv)


def open_times(browser: Chromium, page: Path, loads: int) -> list[float]:
    times = []
    for _ in range(loads):
        browser.blank()  # each load starts afresh
        times.append(browser.open(page))
    return times


def rollout_draw_ms(browser: Chromium, page: Path, rollout_id: int) -> float:
    browser.open(page)
    return browser.evaluate(
        f"(() => {{ const t = performance.now(); location.hash = '#r{rollout_id}'; "
        "route(); return performance.now() - t; })()"
    )


def spread(values: list[float], scale: float = 1.0, digits: int = 0) -> str:
    low, mid, high = (scale * v for v in (min(values), statistics.median(values), max(values)))
    return f"{mid:,.{digits}f} ({low:,.{digits}f}–{high:,.{digits}f})"


def screenshots(folder: Path, work: Path) -> list[Path]:
    run = work / "default"
    if quietly(evaluate.main, ["--out", str(run)]) != 0:
        raise SystemExit("the default evaluation failed")
    # The page again, its header naming the command without this run's temporary folder.
    page = viewer.write(
        run / viewer.VIEWER_NAME,
        viewer.load([run]),
        title="fathom-rlm evaluation: every scripted policy",
        about="uv run python -m fathom_lab.evaluate",
    )
    lines = [json.loads(x) for x in (run / evaluate.TRANSCRIPTS_NAME).read_text().splitlines()]
    reference = [i for i, x in enumerate(lines) if x["policy"] == "fathom-reference"]
    shown = max(reference, key=lambda i: (0 < len(lines[i]["sub_calls"]) <= 3, -i))
    with Chromium(width=1280, height=1000) as browser:
        browser.open(page)
        listing = browser.screenshot(folder / "viewer-list.png")
    with Chromium(width=1280, height=1700) as browser:
        browser.open(page)
        browser.evaluate(f"location.hash = '#r{shown}'; route()")
        browser.evaluate("document.querySelector('details.sub').open = true")
        rollout = browser.screenshot(folder / "viewer-rollout.png")
    return [listing, rollout]


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="benchmarks/viewer_load.py", description=__doc__)
    parser.add_argument("--n", type=cli.integer(1, 200), default=50)
    parser.add_argument("--doc-tokens", type=cli.integer(3_000), default=200_000)
    parser.add_argument("--loads", type=cli.integer(1), default=5)
    parser.add_argument("--out", type=Path, default=None, help="results page (Markdown)")
    parser.add_argument("--screenshots", type=Path, default=None, help="folder for the PNGs")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run = work / "run"
        started = time.perf_counter()
        argv_eval = ["--policies", "fathom-reference", "--n", str(args.n)]
        argv_eval += ["--doc-tokens", str(args.doc_tokens), "--out", str(run)]
        if quietly(evaluate.main, argv_eval) != 0:
            raise SystemExit("the evaluation failed")
        eval_s = time.perf_counter() - started
        page = run / viewer.VIEWER_NAME
        data = json.loads((run / "rollouts.jsonl").read_text().splitlines()[0])
        sizes = [len(x) for x in (run / evaluate.TRANSCRIPTS_NAME).read_text().splitlines()]
        largest = sizes.index(max(sizes))
        empty = viewer.write(work / "empty.html", [], title="no rollouts")
        with Chromium() as browser:
            page_s = open_times(browser, page, args.loads)
            empty_s = open_times(browser, empty, args.loads)
            draw_ms = [rollout_draw_ms(browser, page, largest) for _ in range(args.loads)]
            problems = browser.problems()
        if problems:
            raise SystemExit(f"the page reported problems: {problems}")
        pictures = screenshots(args.screenshots, work) if args.screenshots else []
        transcripts = (run / evaluate.TRANSCRIPTS_NAME).stat().st_size
        size = page.stat().st_size
    command = COMMAND + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    lines = [
        "# Rollout viewer: size and time to open",
        "",
        measured_by(command, also=", headless Chromium from Debian's `chromium`"),
        "",
        f"The run: `fathom_lab.evaluate --policies fathom-reference --n {args.n} --doc-tokens "
        f"{args.doc_tokens}` ({eval_s:.0f} s with the viewer; the first row's document is "
        f"{data['doc_tokens']:,} tokens).",
        "",
        "| what | value |",
        "|---|---|",
        f"| viewer.html | {size / 1e6:.2f} MB ({size:,} bytes) |",
        f"| transcripts.jsonl of the same run (not embedded) | {transcripts / 1e6:.2f} MB |",
        f"| open until the list is drawn, median (min–max) of {args.loads} | "
        f"{spread(page_s, 1000)} ms |",
        f"| the same for a viewer with no rollout (baseline) | {spread(empty_s, 1000)} ms |",
        f"| draw the largest rollout (transcript line {largest}) | {spread(draw_ms, 1, 1)} ms |",
        "",
        "The goal is a 50-rollout run at 200K tokens that opens in under 2 s and stays under a "
        "few MB.",
    ]
    if pictures:
        lines += [
            "",
            "Screenshots of the default evaluation's viewer: "
            + ", ".join(f"`{p.name}`" for p in pictures)
            + f" in `{args.screenshots}`.",
        ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
