"""The `--data` option of the commands that run on user rows (`evaluate`, `sft_export`,
`policy_server`): one check of the file and its rows, so each refuses bad input alike, in one
line naming the row and the field."""

from __future__ import annotations

import argparse

from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.userdata import FORMATS, UserRowError, load_rows

from envtools import cli


def add_data_format_argument(parser: argparse.ArgumentParser, *, alias: bool = True) -> None:
    """`--data-format`, the row schema of `--data`; with `alias`, also its earlier spelling
    `--format`, kept working but no longer shown (sft_export's `--format` is its output's)."""
    parser.add_argument(
        "--data-format",
        choices=tuple(FORMATS),
        default=None,
        help="the row schema of --data (default native)"
        + ("" if alias else "; --format is the output's"),
    )
    if alias:
        parser.add_argument(
            "--format", dest="data_format", choices=tuple(FORMATS), help=argparse.SUPPRESS
        )


def refuse_format_without_data(parser: cli.ArgumentParser, args: argparse.Namespace) -> None:
    """`--data-format` names the schema of `--data`: a usage error without it."""
    if args.data_format is not None and args.data is None:
        parser.reject("--data-format", "--data (the file whose rows it reads)", args.data_format)


def load_user_rows(
    parser: cli.ArgumentParser, path: str, format: str, limit: int | None = None
) -> list[TaskRecord]:
    """The records of the rows at `path` in `format` (the first `limit` of them when given: the
    rest is not read), every one checked first; a missing file or a bad row is a usage error of
    `--data`."""
    parser.require_file("--data", path, "a JSONL file of rows")
    try:
        return load_rows(path, format=format, limit=limit)
    except UserRowError as exc:
        parser.reject("--data", f"valid {format} rows", str(exc))


def refuse_generated_options(parser: cli.ArgumentParser, args: argparse.Namespace) -> None:
    """`--split` and `--doc-tokens` choose generated documents: a usage error beside `--data`."""
    for name in ("split", "doc_tokens"):
        if getattr(args, name) is not None:
            flag = "--" + name.replace("_", "-")
            parser.reject(flag, "no value with --data (the rows bring their documents)", flag)
