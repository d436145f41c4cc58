"""Write the viewer page for saved rollouts of either environment.

    uv run python -m envtools.viewer PATH [PATH ...] [--out FILE] [--source NAME] [--env ID]

A PATH is a JSONL file (one rollout a line), a JSON file (one rollout, or a list of them) or an
`envtools.evaluate` output folder (its transcripts.jsonl). The source of each line is told by its
keys (`--source` names it instead): `envtools.evaluate` transcripts and the real-model fixtures,
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
    parser.add_argument("paths", nargs="+", type=Path, help="JSONL/JSON files or eval folders")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"the page (default: {VIEWER_NAME} beside the first path)",
    )
    parser.add_argument("--source", choices=tuple(READERS), default=None)
    parser.add_argument("--env", choices=(FATHOM, GSM8K), default=None)
    parser.add_argument("--title", default=None)
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
    try:
        write(out, rollouts, title=title, about=f"{len(rollouts)} rollouts")
    except OSError as exc:
        parser.exit(cli.USAGE_ERROR, f"{parser.prog}: error: cannot write {out}: {exc.strerror}\n")
    print(f"wrote {out} ({len(rollouts)} rollouts, {out.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
