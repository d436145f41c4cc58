"""Each measured figure is stated in one place: the page that owns its measure.

A measure is named in many places (the READMEs' tables link to it), but its number appears only in
its owner, beside the command and the conditions of the run; two pages that state the same
measure drift apart (they did: CPU per rollout and document generation, each with two values). A
statement (a table row, or a sentence of prose) that names a measure and carries a figure of that
measure's kind, on any page but the owner, fails this test; so does an owner that no longer
states the measure (the registry would be stale).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MS = r"\d[\d,.]*\s?ms\b"
MEMORY = r"\d[\d,.]*\s?(?:MB|GB|GiB)\b"
SECONDS = r"\d[\d,.]*\s?s\b"
SCORE = r"(?<![\d.])[01]\.\d{2,3}\b"


@dataclass(frozen=True)
class Measure:
    name: str
    owner: str
    """The page that states the measure's numbers, relative to the repository root."""
    names: str
    """A regex for how a statement names the measure."""
    figure: str
    """A regex for how the measure's numbers are written."""
    pages: tuple[str, ...] = ()
    """Pages that must not restate it (default: every page)."""
    on_documents: bool = False
    """The figures depend on the generated documents: the owner names the generator they were
    measured on, from where it first names the measure to the next heading, and that generator is
    the current one (a generator change makes them stale)."""


MEASURES = (
    Measure(
        "document generation",
        "environments/fathom_rlm/docs/documents.md",
        r"200K-token (?:fathom )?document|document generated",
        MS,
    ),
    Measure(
        "sandbox benchmark",
        "environments/fathom_rlm/docs/sandbox.md",
        r"worker ready|slice round trip|round trip, slice|live sessions|idle sandbox sessions",
        f"{MS}|{MEMORY}",
    ),
    Measure(
        "environment-side CPU per rollout",
        "environments/fathom_rlm/docs/sandbox.md",
        r"CPU per rollout",
        MS,
        on_documents=True,
    ),
    Measure("soak", "environments/fathom_rlm/docs/robustness.md", r"\bsoak\b", f"{MS}|{MEMORY}"),
    Measure(
        "v1 harness launch", "environments/fathom_rlm/docs/verifiers.md", r"harness launch", SECONDS
    ),
    Measure(
        "GSM8K grading throughput",
        "environments/gsm8k_multireward/README.md",
        r"answers/s|GSM8K grading",
        r"\d[\d,]*\s?(?:answers)?/s\b",
    ),
    Measure(
        "env-server pool throughput",
        "docs/serving.md",
        r"env-server pool|serving pool|pool size",
        r"\d[\d.]*\s?rollouts/s|\d[\d.]*\s?GiB",
    ),
    Measure(
        "SFT export",
        "docs/training.md",
        r"conversations",
        r"\d[\d,]*\s?conversations|\d[\d,]* of \d[\d,]* rollouts",
        on_documents=True,
    ),
    # The same policies on the synthetic split and on real text (the public-domain fixture),
    # side by side: a score stated beside "real text" anywhere else would drift from that table.
    Measure(
        "synthetic and real text",
        "docs/evaluation.md",
        r"real text|real-text|public-domain",
        SCORE,
    ),
    # Scores of the scripted policies are the evaluation's; other pages (the reward audit, the
    # adapters' docs) measure their own runs, so only the READMEs, which summarise, are checked.
    Measure(
        "scripted policy scores",
        "docs/evaluation.md",
        r"honest reference|code-only adversary|grep-only|attack",
        SCORE,
        ("README.md", "environments/fathom_rlm/README.md"),
    ),
)


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for environment in sorted((ROOT / "environments").iterdir()):
        found += [*environment.glob("README.md"), *sorted(environment.glob("docs/*.md"))]
    found += sorted((ROOT / "orchestrator_configs").rglob("*.toml"))
    return [p for p in found if p.is_file()]


def statements(text: str) -> list[str]:
    """Table rows and prose sentences; fenced code blocks are left out (commands, not claims)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    found = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.splitlines()
        found += [line for line in lines if line.lstrip().startswith("|")]
        prose = " ".join(line.lstrip("# ") for line in lines if not line.lstrip().startswith("|"))
        found += re.split(r"(?<=[.;:])\s+(?=[A-Z(`*])", prose)
    return [s for s in found if s.strip()]


BOUND = re.compile(r"[≤≥<>]=?\s?\d[\d,.]*")
"""A goal or a bound (`≤ 20 ms`) is not a measurement; it may be repeated."""


def stated(measure: Measure, text: str) -> list[str]:
    """The statements of `text` that give a number for `measure`."""
    return [
        s
        for s in statements(text)
        if re.search(measure.names, s, re.IGNORECASE)
        and re.search(measure.figure, BOUND.sub("", s))
    ]


@pytest.mark.parametrize("measure", MEASURES, ids=lambda m: m.name)
def test_a_measure_is_stated_only_by_its_owner(measure: Measure) -> None:
    owner = ROOT / measure.owner
    # The owner names the measure and gives figures of its kind (often in a table under a heading
    # that names it, so not necessarily in one statement).
    text = owner.read_text(encoding="utf-8")
    assert re.search(measure.names, text, re.IGNORECASE), f"{measure.owner} no longer names it"
    assert re.search(measure.figure, text), f"{measure.owner} no longer states it"
    checked = [ROOT / p for p in measure.pages] if measure.pages else pages()
    elsewhere = {}
    for page in checked:
        if page == owner:
            continue
        found = stated(measure, page.read_text(encoding="utf-8"))
        if found:
            elsewhere[str(page.relative_to(ROOT))] = [s[:160] for s in found]
    assert elsewhere == {}, f"{measure.name}: state it in {measure.owner} only and link there"


def measured_on(measure: Measure, text: str) -> set[str]:
    """The generators `text` names from its first mention of `measure` to the next heading."""
    first = re.search(measure.names, text, re.IGNORECASE)
    assert first, measure.name
    rest = text[first.start() :]
    heading = re.search(r"^#", rest, re.MULTILINE)
    return set(re.findall(r"fathom-docs-\d+", rest[: heading.start() if heading else None]))


@pytest.mark.parametrize("measure", [m for m in MEASURES if m.on_documents], ids=lambda m: m.name)
def test_a_figure_of_the_documents_names_the_current_generator(measure: Measure) -> None:
    from fathom_rlm.documents.document import GENERATOR_VERSION

    named = measured_on(measure, (ROOT / measure.owner).read_text(encoding="utf-8"))
    assert named == {GENERATOR_VERSION}, (
        f"{measure.owner} gives {measure.name} on {sorted(named) or 'no named generator'}; "
        f"the documents are {GENERATOR_VERSION}: re-measure and say so"
    )


def test_a_restated_figure_is_caught() -> None:
    """The check itself: the README row that once gave CPU per rollout beside the owner's."""
    (cpu,) = [m for m in MEASURES if m.name == "environment-side CPU per rollout"]
    row = "| fathom environment-side CPU per rollout | 33 ms median at 200K | `uv run ...` |"
    assert stated(cpu, "# Measured\n\n| what | result | command |\n|---|---|---|\n" + row)
    linked = "| fathom environment-side CPU per rollout | [sandbox](docs/sandbox.md) | `uv run` |"
    assert not stated(cpu, linked)
    prose = "The CPU per rollout is 41 ms median. Documents are long."
    assert stated(cpu, prose) == ["The CPU per rollout is 41 ms median."]
    assert not stated(cpu, "CPU per rollout: goal ≤ 20 ms, see the sandbox page.")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lstrip("#").strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("readme", ["README.md", "environments/fathom_rlm/README.md"])
def test_the_links_to_the_owners_resolve(readme: str) -> None:
    """The READMEs point at each measure's owner: every relative link reaches a file and, when
    it names one, a heading of that file."""
    page = ROOT / readme
    links = re.findall(r"\]\(([^)#\s]+\.md)(?:#([\w-]+))?\)", page.read_text(encoding="utf-8"))
    assert links
    for target, anchor in links:
        path = (page.parent / target).resolve()
        assert path.is_file(), f"{readme}: {target}"
        if anchor:
            headings = re.findall(r"^#+ .+$", path.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {_anchor(h) for h in headings}, f"{readme}: {target}#{anchor}"
