"""The one-off facts a document contests, and the questions they are drawn for.

A one-off fact (birth, teacher, maker, founding, seat) is told once, plainly, unless the world
contests it: then the text states it six times, once truly and five times falsely, each
statement followed by a verdict of its own that lets it stand or not (verdicts.py). Only the
facts a question reads its answer from are contested, and each serves one question:

* a single_hop question asks one contested fact;
* a multi_hop chain ends in a contested fact, and its earlier hops are plain (were an earlier
  hop contested too, the answers the six branches lead to would pile up on the most common one);
* a comparison asks two contested years (with one plain year, "the older of the two" is the
  plain one whenever most of the other's six candidate years are later).

Why so few: within a document the verdicts' words recur, and every contested fact tells code
that exactly one of its six verdicts lets its statement stand. Over hundreds of facts that is
enough to solve for every word's sign without reading (docs/reward_audit.md, "Sign searches");
over a handful it is not. So the world draws the questions' facts first, ``SINGLES``,
``CHAINS`` and ``PAIRS`` of them, which is what the default family mix asks of a document, and
the question families draw only from this plan.
"""

from __future__ import annotations

import itertools
import math
import random

from .world import CHAIN_RELATIONS, CHAPTER_TOKENS, Chain, Contested, Key, World

SINGLES, CHAINS, PAIRS = 3, 2, 1  # single_hop 2-4, multi_hop 2, comparison 1 of ten questions
MULTI_HOP_GAP_TOKENS = 20_000  # hops at least this far apart (or a quarter of a short text)
_TRIES = 400

# The one-off facts single_hop and comparison questions ask, with their shares of the draw
# (the question's relation is drawn when it is asked: tasks/lookup.py, tasks/counting.py).
SINGLE_FACTS = (("maker", 0.2), ("mentor", 0.2), ("birth", 0.3), ("seat", 0.1), ("founding", 0.2))
PAIR_FACTS = (("birth", 0.7), ("founding", 0.3))


def chain_hops(world: World, letters: str, start: int) -> tuple[Key, ...] | None:
    """The facts a chain reads, hop by hop; None where a person has no teacher."""
    hops: list[Key] = []
    if letters[0] == "A":
        hops.append(("maker", start, 0))
        person = world.artefacts[start].maker
    elif letters[0] == "F":
        hops.append(("founding", start, 0))
        person = world.organisations[start].founder
    else:
        person = start
    for step in letters[1:] if letters[0] in "AF" else letters:
        if step == "M":
            mentor = world.people[person].mentor
            if mentor is None:
                return None
            hops.append(("mentor", person, 0))
            person = mentor
        else:  # B or Y: the birth statement holds both
            hops.append(("birth", person, 0))
    return tuple(hops)


def prominent_names(world: World) -> frozenset[str]:
    """The place and the organisation that most of the story happens around (longest total
    residence / employment). A blind guesser would answer with these, so no contested fact has
    one for its answer, and other questions whose gold is one are thinned out (as OOLONG
    resamples labels so the majority cannot be guessed)."""
    top_place, top_org = _prominent(world)
    return frozenset({world.places[top_place].name, world.organisations[top_org].name})


def _prominent(world: World) -> tuple[int, int]:
    """Ids of the prominent place and organisation (`prominent_names`)."""
    end = float(world.n_chapters)
    stay = [0.0] * len(world.places)
    for p in world.people:
        for i, (t, pl) in enumerate(p.residence):
            nxt = p.residence[i + 1][0] if i + 1 < len(p.residence) else end
            stay[pl] += nxt - t
    work = [0.0] * len(world.organisations)
    for p in world.people:
        for i, (t, g, _) in enumerate(p.employment):
            nxt = p.employment[i + 1][0] if i + 1 < len(p.employment) else end
            work[g] += nxt - t
    top_place = max(range(len(stay)), key=lambda i: (stay[i], -i))
    top_org = max(range(len(work)), key=lambda i: (work[i], -i))
    return top_place, top_org


def _draw(rng: random.Random, table: tuple[tuple[str, float], ...]) -> str:
    """A kind of ``table`` drawn by its share (one float from ``rng``)."""
    kinds, shares = zip(*table, strict=True)
    return rng.choices(kinds, shares)[0]


def plan_contested(world: World, doc_tokens: int, rng: random.Random) -> Contested:
    """Draw a document's question plan: chains first (they need room between hops), then
    pairs, then single facts, no fact serving two questions and no chain's earlier hop
    contested. Fewer than asked only where the world has no room for more."""
    chapter_of = {e.key: e.chapter for e in world.events}
    gap_tokens = min(MULTI_HOP_GAP_TOKENS, doc_tokens / 4)
    min_chapters = math.ceil(gap_tokens / CHAPTER_TOKENS) + 1
    top_place, _ = _prominent(world)
    contested: set[Key] = set()
    plain: set[Key] = set()  # earlier hops of the chains: told once
    starts = {
        "A": len(world.artefacts),
        "F": len(world.organisations),
        "M": len(world.people),
    }

    def free(key: Key) -> bool:
        return key in chapter_of and key not in contested and key not in plain

    chains: list[Chain] = []
    for _ in range(_TRIES):
        if len(chains) == CHAINS:
            break
        letters = rng.choice(tuple(CHAIN_RELATIONS))
        hops = chain_hops(world, letters, int(rng.random() * starts[letters[0]]))
        if hops is None or any(k not in chapter_of or k in contested for k in hops):
            continue
        if hops[-1] in plain:
            continue
        chapters = [chapter_of[k] for k in hops]
        if any(abs(b - a) < min_chapters for a, b in itertools.pairwise(chapters)):
            continue
        if letters[-1] == "B" and world.people[hops[-1][1]].birthplace == top_place:
            continue
        chains.append(Chain(letters, hops[0][1], hops))
        contested.add(hops[-1])
        plain.update(hops[:-1])

    pairs: list[tuple[Key, Key]] = []
    for _ in range(_TRIES):
        if len(pairs) == PAIRS:
            break
        kind = _draw(rng, PAIR_FACTS)
        if kind == "birth":
            year = [p.birth_year for p in world.people]
        else:
            year = [g.founded_year for g in world.organisations]
        i, j = int(rng.random() * len(year)), int(rng.random() * len(year))
        a, b = (kind, i, 0), (kind, j, 0)
        if i == j or year[i] == year[j] or not free(a) or not free(b):
            continue
        pairs.append((a, b))
        contested.update((a, b))

    singles: list[Key] = []
    sizes = {
        "maker": len(world.artefacts),
        "mentor": len(world.people),
        "birth": len(world.people),
        "seat": len(world.organisations),
        "founding": len(world.organisations),
    }
    for _ in range(_TRIES):
        if len(singles) == SINGLES:
            break
        kind = _draw(rng, SINGLE_FACTS)
        key = (kind, int(rng.random() * sizes[kind]), 0)
        if not free(key) or (kind == "seat" and world.organisations[key[1]].seat == top_place):
            continue
        singles.append(key)
        contested.add(key)
    return Contested(tuple(singles), tuple(chains), tuple(pairs))
