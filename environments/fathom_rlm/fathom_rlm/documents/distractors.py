"""Hard negatives: sentences in the relations' own shapes that are not facts of the world.

Every distractor reuses a verb phrase of the document's split. Six kinds change what the
sentence means (negated, planned and cancelled, rumoured then denied, corrected, hypothetical,
quoted claim); their value is always false for the subject in the world (a town the person never
lived in, an organisation they never worked for, a look-alike ID, ...), so no reading of them can
move a gold answer. For a one-off fact (birth, teacher, maker, founding, seat) the value is also
none of the alternative worlds' that the retracted statements state, and a false year is drawn
from the whole range such years take, never near the true one (`stated`). The seventh kind
states a plain fact about a near-namesake: a name one edit away from a real person, object or
organisation that no entity of the world carries.
"""

from __future__ import annotations

import bisect
import itertools

from .alternatives import Alternative
from .grammar import DISTRACTOR_WRAPPERS, NO_PLANNED, RELATION_SLOTS, TIMED
from .narrator import Narrator, Ref, Unit, article, look_alike
from .world import ROLES, birth_year, founding_year

KIND_WEIGHTS: dict[str, float] = {
    "negated": 3,
    "planned": 2,
    "rumoured": 2,
    "corrected": 2,
    "hypothetical": 2,
    "quoted": 2,
    "namesake": 2,
}
RELATION_WEIGHTS: dict[str, float] = {
    "residence": 4,
    "employment": 3,
    "owner": 3,
    "maker": 1,
    "mentor": 1,
    "birth": 1,
    "founding": 1,
    "seat": 1,
    "permit": 1,
    "mark": 1,
}
# Distractors per chapter: this share of the chapter's needles, plus 0-2.
PER_NEEDLE = 0.6


class DistractorMaker:
    """Draws a chapter's distractors from the renderer's random stream and tables."""

    def __init__(self, r: Narrator) -> None:
        self.r = r
        w = r.w
        self.kinds = list(KIND_WEIGHTS)
        self.kind_cum = list(itertools.accumulate(KIND_WEIGHTS.values()))
        self.relations = list(RELATION_WEIGHTS)
        self.relation_cum = list(itertools.accumulate(RELATION_WEIGHTS.values()))
        # Membership-only sets (never iterated): what is true of whom at any time.
        self.lived_in = [{pl for _, pl in p.residence} | {p.birthplace} for p in w.people]
        self.worked_for = [{g for _, g, _ in p.employment} for p in w.people]
        self.owned_by = [{o for _, o in a.owners} for a in w.artefacts]
        self.wrapper_index = {w: i for ws in DISTRACTOR_WRAPPERS.values() for i, w in enumerate(ws)}

    def _weighted(self, items: list[str], cum: list[float]) -> str:
        return items[min(len(items) - 1, bisect.bisect_right(cum, self.r.rnd() * cum[-1]))]

    def chapter_distractors(self, n_needles: int) -> list[Unit]:
        n = int(n_needles * PER_NEEDLE) + int(self.r.rnd() * 3)
        out = []
        for _ in range(n):
            u = self.one()
            if u is not None:
                out.append(u)
        return out

    def one(self) -> Unit | None:
        """One distractor, or None when the drawn subject has no false value to offer."""
        r = self.r
        kind = self._weighted(self.kinds, self.kind_cum)
        relation = self._weighted(self.relations, self.relation_cum)
        if kind == "planned" and relation in NO_PLANNED:
            relation = "residence"
        # A third of the changing relations' distractors use the initial-state phrases.
        initial = relation in TIMED and r.rnd() < 0.33
        vp = r.pick(r.grammar.phrases(relation, initial))
        drawn = self.false_fields(relation)
        if drawn is None:
            return None
        sid, fields, value, detail, refs = drawn
        subject_slot = RELATION_SLOTS[relation][0]
        unit = Unit("", kind, relation, fields.get(subject_slot, ""), value, detail)
        for ref in refs:
            unit.remote.extend(ref.remote)
        if kind == "namesake":
            return self.namesake(unit, vp, sid, fields)
        prefix, suffix, form = wrapper = r.pick(r.grammar.wrappers[kind])
        unit.shape = f"{relation}/{vp.tag}/{kind}{self.wrapper_index[wrapper]}"
        if "{X}" in prefix + suffix:
            claimant = self.claimant(sid if subject_slot == "S" else -1)
            unit.remote.extend(claimant.remote)
            prefix = prefix.replace("{X}", claimant.text)
            suffix = suffix.replace("{X}", claimant.text)
        # No pronoun after a named claimant: "X told everyone that she ..." would be ambiguous.
        pronoun_ok = vp.subject_first and "{X}" not in wrapper[0]
        if subject_slot == "S":
            ref = r.person_ref(sid, pronoun_ok)
        else:
            ref = r.thing_ref(subject_slot, sid, pronoun_ok)
        fields[subject_slot] = ref.text
        sentence, _ = r.compose(vp, form, fields, prefix, suffix)
        remote = unit.remote
        r.with_subject(unit, subject_slot, sid, ref, sentence)
        unit.remote = remote + unit.remote
        return unit

    def retracted(self, relation: str, sid: int, k: int) -> Unit:
        """The ``k``-th false statement about subject ``sid``: the value of alternative world
        ``k`` (alternatives.py) in the relation's own shapes, no cue word, followed by the
        verdict of its own that does not let it stand (verdicts.py)."""
        r = self.r
        vp = r.pick(r.grammar.phrases(relation))
        fields, value, detail, refs = self.alternative_fields(relation, sid, r.alternatives[k])
        slot = RELATION_SLOTS[relation][0]
        # The subject is named, aliased or a pronoun after an antecedent sentence, drawn as a
        # needle's is: if retracted statements never used a pronoun, "a statement whose subject
        # is a pronoun is true" would be a rule learnable without reading. A reader who finds a
        # pronoun statement by its antecedent's name must read two sentences past the hit to
        # reach the retraction.
        ok = vp.subject_first
        ref = r.person_ref(sid, ok) if slot == "S" else r.thing_ref(slot, sid, ok)
        fields[slot] = ref.text
        frame, _ = r.frame()
        sentence, _ = r.compose(vp, "PAST", fields, frame)
        retraction = r.verdict(stands=False)
        unit = Unit("", "retracted", relation, "", value, detail, key=(relation, sid, 0))
        r.with_subject(unit, slot, sid, ref, sentence)
        for other in refs:
            unit.remote.extend(other.remote)
        unit.local.append((len(unit.text) + 1, len(unit.text) + 1 + len(retraction)))
        unit.text += " " + retraction
        unit.shape = f"{relation}/{vp.tag}/retracted"
        return unit

    def alternative_fields(self, relation: str, sid: int, alt: Alternative):
        """(slot fields, value, detail, person refs) of a one-off relation of subject ``sid``
        in alternative world ``alt``."""
        r = self.r
        if relation == "birth":
            year, place = alt.births[sid]
            return (
                {"S": "", "P": r.place_names[place], "Y4": str(year)},
                r.place_names[place],
                str(year),
                [],
            )
        if relation == "seat":
            place = r.place_names[alt.seats[sid]]
            return {"G": r.org_names[sid], "P": place}, place, None, []
        if relation == "founding":
            founder, year = alt.foundings[sid]
            ref = r.other_ref(founder)
            fields = {"G": r.org_names[sid], "F": ref.text, "Y4": str(year)}
            return fields, ref.resolved, str(year), [ref]
        if relation == "maker":
            ref = r.other_ref(alt.makers[sid])
            return {"O": r.art_names[sid], "M": ref.text}, ref.resolved, None, [ref]
        ref = r.other_ref(alt.mentors[sid])  # mentor
        return {"S": "", "M": ref.text}, ref.resolved, None, [ref]

    def claimant(self, not_pid: int) -> Ref:
        r = self.r
        x = r.pick(r.cast)
        if x == not_pid:
            x = (x + 1) % len(r.person_names)
        return r.other_ref(x)

    def namesake(self, unit: Unit, vp, sid: int, fields: dict[str, str]) -> Unit | None:
        """The fact shape, about a text-only name one edit away from entity ``sid``."""
        r, w = self.r, self.r.w
        relation = unit.relation
        slot = RELATION_SLOTS[relation][0]
        if slot == "S":
            family = w.namesake_family.get(sid)
            if family is None:
                return None
            p = w.people[sid]
            name = f"{p.given} {family}" if r.rnd() < 0.6 else f"{p.honorific} {family}"
        elif slot == "O":
            root = w.namesake_art_root.get(sid)
            if root is None:
                return None
            name = f"the {root} {w.artefacts[sid].thing}"
        else:
            root = w.namesake_org_root.get(sid)
            if root is None:
                return None
            name = f"the {root} {w.organisations[sid].kind}"
        fields[slot] = name
        frame, f = r.frame()
        sentence, adv = r.compose(vp, "PAST", fields, frame)
        unit.text, unit.local, unit.subject = sentence, [(0, len(sentence))], name
        unit.shape = f"{relation}/{vp.tag}/frame{f}/{adv}"
        unit.change = relation in TIMED and not vp.initial
        return unit

    def false_fields(self, relation: str):
        """(subject id, slot fields, value, detail, person refs) with a value that is false
        for that subject at every time of the story; None when the draw hit a true value."""
        r, w = self.r, self.r.w
        rnd = r.rnd
        if relation in ("owner", "maker", "mark"):
            aid = r.pick(r.arts)
            fields = {"O": r.art_names[aid]}
            if relation == "mark":
                token = look_alike(rnd, r.all_ids)
                return (
                    None if token in r.real_ids else (aid, {**fields, "ID": token}, token, None, [])
                )
            y = r.pick(r.cast)
            if relation == "owner" and y in self.owned_by[aid]:
                return None
            if relation == "maker" and y in self.stated("maker", aid):
                return None
            ref = r.other_ref(y)
            fields["Y" if relation == "owner" else "M"] = ref.text
            return aid, fields, ref.resolved, None, [ref]
        if relation in ("founding", "seat"):
            gid = r.pick(r.orgs)
            fields = {"G": r.org_names[gid]}
            if relation == "seat":
                pl = int(rnd() * len(r.place_names))
                place = r.place_names[pl]
                if pl in self.stated("seat", gid):
                    return None
                return gid, {**fields, "P": place}, place, None, []
            f = r.pick(r.cast)
            founded = founding_year(rnd, w.start_year)
            if f in self.stated("founding", gid) or founded in self.stated("founding year", gid):
                return None
            ref = r.other_ref(f)
            year = str(founded)
            return gid, {**fields, "F": ref.text, "Y4": year}, ref.resolved, year, [ref]
        return self._person_false(relation)

    def _person_false(self, relation: str):
        r, w = self.r, self.r.w
        rnd = r.rnd
        pid = r.pick(r.cast)
        fields = {"S": ""}
        if relation in ("residence", "birth"):
            pl = int(rnd() * len(r.place_names))
            place = r.place_names[pl]
            if relation == "residence":
                # Not a home, nor any birthplace the text gives the person: a negated home that
                # skipped only the true birthplace would clear it among the six.
                if pl in self.lived_in[pid] or pl in self.stated("birth", pid):
                    return None
                return pid, {**fields, "P": place}, place, None, []
            year = birth_year(rnd, w.start_year)
            if pl in self.stated("birth", pid) or year in self.stated("birth year", pid):
                return None
            return pid, {**fields, "P": place, "Y4": str(year)}, place, str(year), []
        if relation == "employment":
            g = int(rnd() * len(r.org_names))
            if g in self.worked_for[pid]:
                return None
            role = r.pick(ROLES)
            fields.update(G=r.org_names[g], R=article(role))
            return pid, fields, r.org_names[g], role, []
        if relation == "mentor":
            m = r.pick(r.cast)
            if m == pid or m in self.stated("mentor", pid):
                return None
            ref = r.other_ref(m)
            return pid, {**fields, "M": ref.text}, ref.resolved, None, [ref]
        token = look_alike(rnd, r.all_ids)  # permit
        return None if token in r.real_ids else (pid, {**fields, "ID": token}, token, None, [])

    def stated(self, key: str, sid: int) -> set[int]:
        """Every value the one-off fact ``key`` of subject ``sid`` takes in the text: the true
        one and each alternative world's (alternatives.py). A hard negative about that fact
        avoids them all. One that avoided only the truth, or sat near it (a year a few years
        off), would single out the true statement among the retracted ones."""
        return self.r.stated[key, sid]
