"""Time fathom-rlm document generation and task building.

Usage: uv run python labs/fathom_rlm/benchmarks/fathom_documents.py [--seeds 7] [--tokens 16000 \\
    64000 200000]
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --baselines 160 --tokens 16000
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --shapes
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --naive 5 --tokens 64000
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --subjects 100 --tokens 200000
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --cues 100 --tokens 200000
       uv run python labs/fathom_rlm/benchmarks/fathom_documents.py --verdicts 160 --tokens 16000

Reports median / min / max wall time over several seeds for each length (fresh generation, no
cache), the median CPU time of the process (less sensitive to other work sharing the machine),
and the time to build questions for one document. ``--shapes`` prints the grammar's own count of
sentence shapes per relation and split (and filler templates per kind). ``--naive`` runs a
pattern matcher that knows the train split's verb phrases but not what the sentence around them
means, over train and heldout documents, and reports what share of its matches are real facts.
``--subjects`` asks whether how a statement names its subject tells a fact from a hard negative:
over `train` documents, the share of real facts among statements whose subject is a pronoun or
an alias, and among those that name it (among a contested fact's statements, among all plain
statements, among all). ``--cues`` asks the same of the sentence after a
statement: the share of real facts among plain statements whose next sentence (same paragraph)
holds a generic English word of negation or correction (the keyword solver's `CORRECTION_CUES`),
and among those whose next sentence does not; first for the statements of contested facts (true
and retracted, whose next sentence is their verdict), then for all plain statements and for all.
``--verdicts`` looks at the verdicts themselves, per split: the share of each sign-bearing part
that is a plus in either class, the most times one verdict sentence occurs among a document's
verdicts, and the balanced accuracy and pick-one-of-six accuracy of two learners fit on
`train`'s verdicts (a sign per part, word weights) on every split.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable

from fathom_lab.audit.baselines import blind_answer, grep_answer
from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.documents import (
    FAMILIES,
    GENERATOR_VERSION,
    generate_document,
    make_tasks,
    matches_gold,
    normalize_answer,
    shape_counts,
)

from envtools import cli


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python labs/fathom_rlm/benchmarks/fathom_documents.py",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--seeds", type=cli.integer(1), default=7, help="documents per length")
    parser.add_argument(
        "--tokens", type=cli.integer(MIN_DOC_TOKENS), nargs="+", default=[16_000, 64_000, 200_000]
    )
    parser.add_argument(
        "--questions", type=cli.integer(1), default=10, help="questions per document"
    )
    parser.add_argument("--shapes", action="store_true", help="print the shape counts and exit")
    for option, (what, _) in STUDIES.items():
        parser.add_argument(
            f"--{option}", type=cli.integer(0), default=0, metavar="DOCS", help=what
        )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.shapes:
        shapes()
        return
    # Each study instead of timing: DOCS documents at every length asked for.
    for option, (_, study) in STUDIES.items():
        if n_docs := getattr(args, option):
            for tokens in args.tokens:
                study(n_docs, tokens)
            return

    print(f"generator {GENERATOR_VERSION}; {args.seeds} seeds per length (times in ms)")
    print("| doc_tokens | chars | generate median | min | max | CPU median | make_tasks median |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    generate_document(0, 16_000)  # warm imports
    for tokens in args.tokens:
        gen, cpu, build = [], [], []
        chars = 0
        for seed in range(1, args.seeds + 1):
            start, cpu_start = time.perf_counter(), time.process_time()
            doc = generate_document(seed, tokens)
            gen.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
            chars = len(doc.text)
            build.append(_time(lambda d=doc: make_tasks(d, args.questions)))
        print(
            f"| {tokens:,} | {chars:,} | {statistics.median(gen) * 1e3:.1f} | "
            f"{min(gen) * 1e3:.1f} | {max(gen) * 1e3:.1f} | {statistics.median(cpu) * 1e3:.1f} | "
            f"{statistics.median(build) * 1e3:.1f} ({args.questions} q) |"
        )


def shapes() -> None:
    """Shapes per relation and split, as the grammar counts them (fact / distractor)."""
    counts = shape_counts()
    splits = list(counts)
    print(f"generator {GENERATOR_VERSION}; shapes per relation: facts / distractors")
    print("| relation | " + " | ".join(splits) + " |")
    print("|---|" + "---:|" * len(splits))
    for relation in (r for r in counts[splits[0]] if r != "filler"):
        cells = [
            f"{counts[s][relation]['fact']} / {counts[s][relation]['distractor']}" for s in splits
        ]
        print(f"| {relation} | " + " | ".join(cells) + " |")
    kinds = counts[splits[0]]["filler"]
    print("\nfiller templates per kind")
    print("| kind | " + " | ".join(splits) + " |")
    print("|---|" + "---:|" * len(splits))
    for kind in kinds:
        print(f"| {kind} | " + " | ".join(str(counts[s]["filler"][kind]) for s in splits) + " |")


def naive(n_docs: int, tokens: int) -> None:
    """Matches of the train verb phrases (past tense, anywhere in a sentence), classified by the
    annotation of the sentence they fall in: a fact, a distractor of some kind, or other."""
    from fathom_lab.ladder.grammar_reader import SENTENCE, compiled_grammar

    patterns = [p for entries in compiled_grammar(("train",)).index.values() for _, p in entries]
    print(f"naive train-pattern matcher, {n_docs} documents of {tokens:,} tokens per split")
    print("| split | matches | in fact sentences | in distractors | distractor kinds |")
    print("|---|---:|---:|---:|---|")
    for split, base in (("train", 1_000_000), ("heldout", 3_000_000)):
        kinds: dict[str, int] = {}
        hits = facts = 0
        for seed in range(base + 100, base + 100 + n_docs):
            doc = generate_document(seed, tokens)
            fact_sentences = set(doc.spans.values())
            # A retracted distractor's last span is its retraction; the match is its statement.
            distractor_of = {
                (d.fact.sentence if d.kind == "retracted" and d.fact else d.spans[-1]): d.kind
                for d in doc.distractors
            }
            for m in SENTENCE.finditer(doc.text):
                sentence = m.group()
                found = False
                for p in patterns:
                    hit = p.search(sentence)
                    if hit is not None and hit["v_past"] is not None:
                        found = True
                        break
                if not found:
                    continue
                hits += 1
                span = (m.start(), m.end())
                facts += span in fact_sentences
                if span in distractor_of:
                    kinds[distractor_of[span]] = kinds.get(distractor_of[span], 0) + 1
        n = max(1, hits)
        wrong = sum(kinds.values())
        detail = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        print(f"| {split} | {hits} | {facts / n:.2f} | {wrong / n:.2f} | {detail} |")


def subject_forms(n_docs: int, tokens: int) -> None:
    """P(real fact | subject form) over the first `train` documents, for the statements of
    contested facts (the true one and its retracted ones), for the plain statements (facts,
    retracted statements, near-namesakes: no cue word in the sentence) and for every statement
    in a relation's shape (cue-word negatives too)."""
    from fathom_rlm.documents import split_seeds

    seeds = list(dict.fromkeys(split_seeds("train")))[:n_docs]
    plain_kinds = ("retracted", "namesake")
    counts: dict[tuple[str, bool, str], int] = {}  # (scope, is fact, form class) -> n
    print(f"generator {GENERATOR_VERSION}; {len(seeds)} train documents of {tokens:,} tokens")
    for seed in seeds:
        doc = generate_document(seed, tokens)
        if seed == seeds[0]:
            forms = Counter(doc.forms.values())
            kinds = Counter(d.kind for d in doc.distractors)
            cue = sum(n for k, n in kinds.items() if k not in plain_kinds)
            print(
                f"first document (seed {seed}): {len(doc.forms)} needles "
                f"({', '.join(f'{k} {n}' for k, n in sorted(forms.items()))}); "
                f"retracted {kinds['retracted']}, namesake {kinds['namesake']}, cue-word {cue}"
            )
        contested = doc.world.contested.keys
        rows = [(True, "", form, key in contested) for key, form in doc.forms.items()]
        rows += [(False, d.kind, d.form, d.kind == "retracted") for d in doc.distractors]
        for is_fact, kind, form, of_contested in rows:
            classes = [form, "pronoun/alias"] if form in ("pronoun", "alias") else ["named"]
            scopes = ["all"] + (["plain"] if is_fact or kind in plain_kinds else [])
            scopes += ["contested"] if of_contested else []
            for scope in scopes:
                for cls in classes:
                    counts[scope, is_fact, cls] = counts.get((scope, is_fact, cls), 0) + 1
    print("| statements | subject | facts | hard negatives | P(fact) |")
    print("|---|---|---:|---:|---:|")
    for scope in ("contested", "plain", "all"):
        for cls in ("pronoun", "alias", "pronoun/alias", "named"):
            f, d = counts.get((scope, True, cls), 0), counts.get((scope, False, cls), 0)
            print(f"| {scope} | {cls} | {f} | {d} | {f / max(1, f + d):.3f} |")


def next_sentence_cues(n_docs: int, tokens: int) -> None:
    """P(real fact | the next sentence has a correction word) over the first `train` documents.
    For a contested fact (true and retracted statements, the candidates a reading question about
    a subject sees) the next sentence is the statement's verdict; then for every plain statement
    (facts, retracted statements, near-namesakes) and for every statement in a relation's shape."""
    from fathom_lab.audit.keyword_solver import CORRECTION_CUES
    from fathom_rlm.documents import split_seeds

    seeds = list(dict.fromkeys(split_seeds("train")))[:n_docs]
    counts: Counter[tuple[str, bool, bool]] = Counter()  # (scope, is fact, cue after) -> n
    print(f"generator {GENERATOR_VERSION}; {len(seeds)} train documents of {tokens:,} tokens")
    for seed in seeds:
        doc = generate_document(seed, tokens)
        text = doc.text

        def cue_after(end: int, text: str = text) -> bool:
            # The sentence right after `end` in its paragraph (none at a paragraph's end).
            if text[end : end + 1] != " ":
                return False
            stops = [i for i in (text.find(c, end + 1) for c in ".!?\n") if i >= 0]
            return bool(CORRECTION_CUES.search(text[end + 1 : min(stops, default=-1)].lower()))

        contested = doc.world.contested.keys
        rows = [
            (True, "", key in contested, cue_after(f.sentence[1])) for key, f in doc.facts.items()
        ]
        # A retracted statement (of a contested fact) ends the span before its verdict.
        for d in doc.distractors:
            own = d.spans[-2] if d.kind == "retracted" else d.spans[-1]
            rows.append((False, d.kind, d.kind == "retracted", cue_after(own[1])))
        for is_fact, kind, of_contested, cue in rows:
            scopes = ["all"]
            if is_fact or kind in ("retracted", "namesake"):
                scopes.append("plain")
            if of_contested:
                scopes.append("contested facts")
            for scope in scopes:
                counts[scope, is_fact, cue] += 1
    print("| statements | next sentence | facts | hard negatives | P(fact) |")
    print("|---|---|---:|---:|---:|")
    for scope in ("contested facts", "plain", "all"):
        for cue in (True, False):
            f, d = counts[scope, True, cue], counts[scope, False, cue]
            label = "correction word" if cue else "no correction word"
            print(f"| {scope} | {label} | {f} | {d} | {f / max(1, f + d):.3f} |")


def verdicts(n_docs: int, tokens: int) -> None:
    """The verdicts of the first DOCS documents of each split's seed range: how often each
    sign-bearing part is a plus in either class, how often a verdict sentence recurs in a
    document, and what two learners fit on `train`'s verdicts make of each split's
    (fathom_lab.audit.verdict_lexicon)."""
    from fathom_lab.audit.verdict_lexicon import (
        NaiveBayes,
        SignLexicon,
        score,
        sign_counts,
        verdict_groups,
    )
    from fathom_rlm.documents.seeds import SPLIT_SEED_BASE

    groups: dict[str, list] = {}
    most = 0  # the most times one verdict sentence occurs among a document's verdicts
    per_doc: list[int] = []  # verdicts per document
    for split in ("train", "eval", "heldout"):
        groups[split] = []
        for seed in range(SPLIT_SEED_BASE[split], SPLIT_SEED_BASE[split] + n_docs):
            doc_groups = verdict_groups(generate_document(seed, tokens))
            groups[split] += doc_groups
            every = Counter(sentence for g in doc_groups for sentence, _ in g)
            most = max(most, max(every.values()))
            per_doc.append(sum(every.values()))
    print(f"generator {GENERATOR_VERSION}; {n_docs} documents of {tokens:,} tokens per split")
    print(
        f"verdicts per document {min(per_doc)}-{max(per_doc)}; the most times one verdict "
        f"sentence occurs in a document: {most}"
    )
    print("| split | class | statements | nobody | verb1 backs | verb2 backs | outcome |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for split, split_groups in groups.items():
        counts = sign_counts(split_groups)
        for stands in (True, False):
            n = counts[stands, "end", 1] + counts[stands, "end", -1]
            cells = [counts[stands, "who", -1] / n] + [
                counts[stands, slot, 1] / n for slot in ("verb", "verb2", "end")
            ]
            label = "stands" if stands else "retracted"
            print(f"| {split} | {label} | {n} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    learners = {
        "sign lexicon": SignLexicon(groups["train"]),
        "word weights": NaiveBayes(groups["train"]),
    }
    print("\n| learner (fit on train) | split | facts | balanced accuracy | pick one of six |")
    print("|---|---|---:|---:|---:|")
    for name, learner in learners.items():
        for split, split_groups in groups.items():
            balanced, pick = score(learner, split_groups)
            where = f"{split} (in-sample)" if split == "train" else split
            print(f"| {name} | {where} | {len(split_groups)} | {balanced:.3f} | {pick:.3f} |")


def baselines(n_docs: int, tokens: int, per_doc: int = 10) -> None:
    """Accuracy of answering without reading, per family (see the package's baselines module).
    Ten questions per document, as the splits ask: a document's question plan holds three
    single facts, two chains and one pair, so more questions would mostly add ID lookups."""
    scores: dict[str, list[tuple[bool, bool, str]]] = {f: [] for f in FAMILIES}
    for seed in range(100, 100 + n_docs):
        doc = generate_document(seed, tokens)
        for row in make_tasks(doc, per_doc):
            q, gold, aliases = row.question, row.answer, row.aliases
            scores[row.family].append(
                (
                    matches_gold(blind_answer(doc, q), gold, aliases),
                    matches_gold(grep_answer(doc, q), gold, aliases),
                    normalize_answer(gold),
                )
            )
    print(f"{n_docs} documents of {tokens:,} tokens, {per_doc} questions each")
    print("| family | depth | n | blind | grep | most common gold |")
    print("|---|---:|---:|---:|---:|---:|")
    for family, rows in scores.items():
        n = len(rows)
        golds = [g for _, _, g in rows]
        top = max(golds.count(g) for g in set(golds)) if golds else 0
        print(
            f"| {family} | {FAMILIES[family]} | {n} | {sum(b for b, _, _ in rows) / n:.3f} | "
            f"{sum(g for _, g, _ in rows) / n:.3f} | {top / n:.3f} |"
        )


# The studies run instead of timing: option -> (what it reports, the function), each over DOCS
# documents at every length asked for; the first one asked for runs.
STUDIES: dict[str, tuple[str, Callable[[int, int], None]]] = {
    "cues": ("correction words after statements", next_sentence_cues),
    "verdicts": ("verdict signs per class, recurrence, lexicons learned on train", verdicts),
    "subjects": ("subject forms of facts/negatives", subject_forms),
    "naive": ("naive matcher", naive),
    "baselines": (
        "instead of timing, score the blind and grep baselines over DOCS documents",
        baselines,
    ),
}


if __name__ == "__main__":
    main()
