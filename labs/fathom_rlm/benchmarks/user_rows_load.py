"""Loading user rows at scale: rows per second and peak memory against row and document count.

    uv run python labs/fathom_rlm/benchmarks/user_rows_load.py                      # the table \\
        in the README
    uv run python labs/fathom_rlm/benchmarks/user_rows_load.py --rows 500,2000 --documents 20 \\
        --doc-tokens 217000
    uv run python labs/fathom_rlm/benchmarks/user_rows_load.py --workers 1,2,4 --rows 2000 \\
        --documents 20

Writes, in a temporary folder, D documents of about T tokens each (invented words, 4 characters
a token) and a JSONL file of N rows asking about them in turn (`document_path` rows, so the
documents are shared as a user's rows would share them), then loads the file with
`fathom_rlm.userdata.load_rows` in a fresh process per cell and reports that process's load
time and peak resident memory (`ru_maxrss`). The fresh process keeps one cell's memory out of
the next.

With `--workers`, W processes load the same rows at once and read every row's document (as a
pool of env-server workers serving them does), first with the documents kept in each process's
memory (`FATHOM_RLM_DOCUMENT_DIR` empty), then mapped from one folder; each reports its resident
and proportional memory (`/proc/self/smaps_rollup`: a page shared by k processes counts 1/k in
each one's PSS), summed over the W.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "sa", "vor", "ne", "pil", "da", "quo", "bre"]


def write_rows(folder: Path, rows: int, documents: int, doc_tokens: int) -> Path:
    """`documents` text files of about `doc_tokens` tokens and a rows file of `rows` rows."""
    rng = random.Random(0)
    for d in range(documents):
        words: list[str] = []
        size = 0
        while size < doc_tokens * 4:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
            words.append(word)
            size += len(word) + 1
        text = f"Document {d}. " + " ".join(words) + "."
        (folder / f"doc{d}.txt").write_text(text, encoding="utf-8")
    path = folder / "rows.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for r in range(rows):
            row = {
                "id": f"r{r}",
                "document_path": f"doc{r % documents}.txt",
                "question": f"What is asked in question {r}?",
                "answer": f"answer {r}",
            }
            out.write(json.dumps(row) + "\n")
    return path


def measure(path: Path) -> dict[str, float]:
    """Load `path` in this process: seconds and peak RSS in MB."""
    from fathom_rlm.userdata import load_rows

    start = time.perf_counter()
    records = load_rows(path)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"rows": len(records), "seconds": seconds, "peak_mb": peak_mb}


def _memory_mb() -> dict[str, float]:
    """This process's RSS and PSS now, in MB."""
    fields = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        fields[name.rstrip(":")] = int(value) / 1024
    return {"rss_mb": fields["Rss"], "pss_mb": fields["Pss"]}


def serve(path: Path) -> dict[str, float]:
    """Load `path`, read every row's document once, and report memory while holding the rows."""
    from fathom_rlm.documents import task_document
    from fathom_rlm.userdata import load_rows

    records = load_rows(path)
    read = sum(len(task_document(r)) for r in records)
    return {**_memory_mb(), "chars_read": read}


def workers_table(counts: list[int], rows: int, documents: int, doc_tokens: int) -> None:
    """The memory of W processes serving the same rows, documents in memory against mapped."""
    print("| documents kept | workers | RSS MB each | PSS MB summed over the workers |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_rows(Path(tmp), rows, documents, doc_tokens)
        for label, folder in (("in memory", ""), ("mapped", str(Path(tmp) / "store"))):
            for count in counts:
                env = {**os.environ, "FATHOM_RLM_DOCUMENT_DIR": folder}
                child = [sys.executable, __file__, "--serve", str(path)]
                procs = [
                    subprocess.Popen(
                        child, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
                    )
                    for _ in range(count)
                ]
                # Each reports once it holds its rows, then waits: all W are alive when measured.
                cells = [json.loads(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]
                for p in procs:
                    p.communicate("")
                rss = sorted(c["rss_mb"] for c in cells)[len(cells) // 2]
                pss = sum(c["pss_mb"] for c in cells)
                print(f"| {label} | {count} | {rss:,.0f} | {pss:,.0f} |", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="200,1000,2000", help="comma-separated row counts")
    parser.add_argument("--documents", default="1,20", help="comma-separated document counts")
    parser.add_argument("--doc-tokens", type=int, default=217_000)
    parser.add_argument(
        "--workers", help="comma-separated process counts: the memory of W processes serving rows"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    if args.serve:
        print(json.dumps(serve(args.serve)), flush=True)
        sys.stdin.read()  # hold the rows until every worker has reported
        return
    if args.workers:
        counts = [int(x) for x in args.workers.split(",")]
        for documents in (int(x) for x in args.documents.split(",")):
            for rows in (int(x) for x in args.rows.split(",")):
                workers_table(counts, rows, documents, args.doc_tokens)
        return
    print("| rows | documents | load s | rows/s | peak RSS MB |")
    print("|---|---|---|---|---|")
    for documents in (int(x) for x in args.documents.split(",")):
        for rows in (int(x) for x in args.rows.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                path = write_rows(Path(tmp), rows, documents, args.doc_tokens)
                child = [sys.executable, __file__, "--child", str(path)]
                done = subprocess.run(child, capture_output=True, text=True, check=True)
                cell = json.loads(done.stdout)
            rate = cell["rows"] / cell["seconds"]
            print(
                f"| {rows:,} | {documents} | {cell['seconds']:.2f} | {rate:,.0f} | "
                f"{cell['peak_mb']:,.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
