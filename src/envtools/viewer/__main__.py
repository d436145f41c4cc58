"""Write the viewer page for saved rollouts of either environment.

    uv run python -m envtools.viewer PATH [PATH ...] [--out FILE] [--source NAME] [--env ID]

A PATH is a JSONL file (one rollout a line), a JSON file (one rollout, or a list of them) or an
`fathom_lab.evaluate` output folder (its transcripts.jsonl). The source of each line is told by its
keys (`--source` names it instead): `fathom_lab.evaluate` transcripts and the real-model fixtures,
legacy `vf-eval -s` results.jsonl, TRL completions logs, `envtools.openenv_play` episodes.
The environment is told by the scores (`--env` names it instead). Unreadable input is one line
on stderr naming the file and line, exit 2, and nothing is written.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from envtools import cli
from envtools.viewer import READERS, VIEWER_NAME, load, write
from envtools.viewer.rollouts import FATHOM, GSM8K


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.ArgumentParser(
        prog="python -m envtools.viewer",
        description="Write one static HTML page (no server, no network) showing saved rollouts.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        help="saved rollouts, all on one page: JSONL or JSON files, or folders (an "
        "fathom_lab.evaluate output, a legacy vf-eval -s run, a verifiers v1 run). Read: evaluate "
        "transcripts, vf-eval results, v1 traces, TRL completions logs, openenv_play episodes",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"the page (default: {VIEWER_NAME} in the first path's folder, or inside it when "
        "it is a folder: an evaluation's own page is replaced)",
    )
    parser.add_argument(
        "--source",
        choices=tuple(READERS),
        default=None,
        help="read every line as this form (default: told by each line's keys); a wrong one "
        "is refused only when a line lacks the form's key fields",
    )
    parser.add_argument(
        "--env",
        choices=(FATHOM, GSM8K),
        default=None,
        help="read every rollout as this environment's (default: told by its scores)",
    )
    parser.add_argument("--title", default=None, help="the page's title")
    args = parser.parse_args(argv)
    for path in args.paths:
        if not path.exists():
            parser.reject("paths", "existing files or folders", str(path))
    try:
        rollouts = load(args.paths, source=args.source, env=args.env)
    except ValueError as exc:
        parser.exit(cli.USAGE_ERROR, f"{parser.prog}: error: {' '.join(str(exc).split())}\n")
    if not rollouts:
        parser.reject("paths", "at least one saved rollout", ", ".join(map(str, args.paths)))
    first = args.paths[0]
    out = args.out or (first if first.is_dir() else first.parent) / VIEWER_NAME
    if out.is_dir():
        parser.reject("--out", "a file path (not a folder)", str(out))
    names = [p.name for p in args.paths]
    title = (
        args.title or f"Rollouts: {', '.join(names) if len(names) <= 3 else f'{len(names)} files'}"
    )
    count = f"{len(rollouts)} rollout{'s' if len(rollouts) != 1 else ''}"
    try:
        write(out, rollouts, title=title, about=count)
    except OSError as exc:
        parser.exit(cli.USAGE_ERROR, f"{parser.prog}: error: cannot write {out}: {exc.strerror}\n")
    print(f"wrote {out} ({count}, {out.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
