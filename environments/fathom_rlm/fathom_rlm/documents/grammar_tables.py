"""The phrase tables of the relation grammar (data only; composition is in ``grammar.py``).

A relation sentence is ``[prefix][front adverbial, ]core[ end adverbial][suffix].`` where the core
is a verb phrase with named slots. Verb phrases are written ``"{S} [moved/move/moved] to {P}"``:
the bracket holds the verb's past, base and past-participle forms, so the same phrase also yields
its negated ("did not move", "never moved"), planned ("meant to move") and hypothetical ("would
have moved") cores. A be-verb (base ``be``) negates in place ("was not born").

Slots: S person subject, P place, G organisation, R role with its article, O artefact, Y new
owner, M maker or teacher, F founder, ID permit or registry mark, Y4 year.

Every list is dealt to the splits round-robin (index mod 3: train, eval, heldout), so the three
splits never share a verb phrase, framing, adverbial, distractor wrapper or introduction.
"""

from __future__ import annotations

VERB_PHRASES: dict[str, tuple[str, ...]] = {
    "residence": (
        "{S} [moved/move/moved] to {P}",
        "{S} [settled/settle/settled] in {P}",
        "{S} [took/take/taken] lodgings in {P}",
        "{S} [made/make/made] a new home in {P}",
        "{S} [went/go/gone] off to live in {P}",
        "{S} [set/set/set] up house in {P}",
        "{S} [rented/rent/rented] two rooms in {P}",
        "{S} [found/find/found] a cottage to let in {P}",
        "{S} [relocated/relocate/relocated] to {P}",
        "{S} [put/put/put] down roots in {P}",
    ),
    "employment": (
        "{S} [took/take/taken] a post as {R} with {G}",
        "{S} [signed/sign/signed] on with {G} as {R}",
        "{G} [hired/hire/hired] {S} as {R}",
        "{S} [entered/enter/entered] the service of {G} as {R}",
        "{S} [went/go/gone] to work for {G} as {R}",
        "{G} [took/take/taken] on {S} as {R}",
        "{S} [found/find/found] work as {R} at {G}",
        "{G} [engaged/engage/engaged] {S} as {R}",
        "{S} [joined/join/joined] {G} as {R}",
        "{S} [became/become/become] {R} at {G}",
    ),
    "owner": (
        "{Y} [bought/buy/bought] {O}",
        "{O} [passed/pass/passed] to {Y}",
        "{Y} [acquired/acquire/acquired] {O}",
        "{O} [came/come/come] into the hands of {Y}",
        "{Y} [won/win/won] {O} at cards",
        "{O} [ended/end/ended] up with {Y}",
        "{Y} [took/take/taken] possession of {O}",
        "{O} [became/become/become] the property of {Y}",
        "{Y} [inherited/inherit/inherited] {O}",
        "{Y} [received/receive/received] {O} as a gift",
    ),
    "maker": (
        "{M} [made/make/made] {O}",
        "{M} [crafted/craft/crafted] {O}",
        "{O} [was/be/been] made by {M}",
        "{M} [built/build/built] {O}",
        "{O} [came/come/come] from the workbench of {M}",
        "{M} [fashioned/fashion/fashioned] {O}",
        "{O} [was/be/been] crafted by {M}",
        "{M} [forged/forge/forged] {O}",
        "{M} [put/put/put] together {O}",
        "{O} [owed/owe/owed] its making to {M}",
    ),
    "mentor": (
        "{S} [learned/learn/learned] the trade under {M}",
        "{S} [was/be/been] apprenticed to {M}",
        "{M} [taught/teach/taught] {S}",
        "{S} [studied/study/studied] with {M}",
        "{M} [trained/train/trained] {S}",
        "{S} [served/serve/served] an apprenticeship with {M}",
        "{M} [took/take/taken] {S} on as a pupil",
        "{S} [was/be/been] schooled by {M}",
        "{S} [owed/owe/owed] every skill to {M}",
        "{M} [instructed/instruct/instructed] {S} in the craft",
    ),
    "birth": (
        "{S} [was/be/been] born in {P} in {Y4}",
        "{S} [came/come/come] into the world at {P} in {Y4}",
        "{S} [drew/draw/drawn] first breath in {P} in {Y4}",
        "{S} [was/be/been] born at {P} in the year {Y4}",
        "{S} [entered/enter/entered] the world in {P} in {Y4}",
        "{S} [began/begin/begun] life in {P} in {Y4}",
        "{S} [saw/see/seen] the light of day in {P} in {Y4}",
        "in {Y4} {S} [arrived/arrive/arrived] as a newborn in {P}",
        "{S} [started/start/started] out in life at {P} in {Y4}",
        "{S} [was/be/been] born in the year {Y4} at {P}",
    ),
    "founding": (
        "{F} [founded/found/founded] {G} in {Y4}",
        "{G} [was/be/been] founded by {F} in {Y4}",
        "{F} [established/establish/established] {G} in {Y4}",
        "{F} [set/set/set] up {G} in {Y4}",
        "{G} [was/be/been] established by {F} in {Y4}",
        "{F} [started/start/started] {G} in {Y4}",
        "{G} [was/be/been] set up by {F} in {Y4}",
        "{F} [created/create/created] {G} as early as {Y4}",
        "{F} [organised/organise/organised] {G} in {Y4}",
        "{G} [was/be/been] begun by {F} in {Y4}",
    ),
    "seat": (
        "{G} [kept/keep/kept] its hall in {P}",
        "{G} [had/have/had] its seat in {P}",
        "{G} [ran/run/run] its affairs from {P}",
        "{G} [made/make/made] its headquarters in {P}",
        "{G} [was/be/been] seated in {P}",
        "{G} [met/meet/met] in a hall at {P}",
        "{G} [based/base/based] itself in {P}",
        "{G} [was/be/been] headquartered in {P}",
        "{G} [held/hold/held] its councils in {P}",
        "{G} [kept/keep/kept] its offices at {P}",
    ),
    "permit": (
        "{S} [held/hold/held] travel permit {ID}",
        "{S} [carried/carry/carried] a permit numbered {ID}",
        "permit {ID} [was/be/been] issued to {S}",
        "{S} [was/be/been] granted permit {ID}",
        "the papers of {S} [were/be/been] logged under permit {ID}",
        "{S} [travelled/travel/travelled] on permit {ID}",
        "permit {ID} [was/be/been] made out to {S}",
        "{S} [obtained/obtain/obtained] permit {ID}",
        "{S} [was/be/been] registered under permit {ID}",
        "{S} [received/receive/received] travel permit {ID}",
    ),
    "mark": (
        "{O} [was/be/been] entered in the registry under mark {ID}",
        "the registrar [logged/log/logged] {O} as item {ID}",
        "{O} [bore/bear/borne] the registry mark {ID}",
        "{O} [was/be/been] catalogued as {ID}",
        "mark {ID} [was/be/been] assigned to {O}",
        "{O} [carried/carry/carried] the mark {ID}",
        "{O} [was/be/been] listed under mark {ID}",
        "the registry [recorded/record/recorded] {O} as {ID}",
        "{O} [was/be/been] stamped with mark {ID}",
        "mark {ID} [referred/refer/referred] to {O}",
    ),
}

# The state a changing relation starts in (the first home, post or owner): state verbs, never
# verbs of change, so "moved to" always means a move (arrivals are counted).
INITIAL_VERB_PHRASES: dict[str, tuple[str, ...]] = {
    "residence": (
        "{S} [lived/live/lived] in {P}",
        "{S} [kept/keep/kept] a house in {P}",
        "{S} [was/be/been] then a resident of {P}",
        "{S} [had/have/had] rooms above a shop in {P}",
        "{S} [was/be/been] living at the edge of {P}",
        "{S} [resided/reside/resided] in {P}",
        "{P} [was/be/been] home to {S}",
        "{S} [dwelt/dwell/dwelt] in {P}",
        "{S} [was/be/been] a householder in {P}",
        "{S} [lodged/lodge/lodged] with a family in {P}",
    ),
    "employment": (
        "{S} [worked/work/worked] as {R} for {G}",
        "{S} [was/be/been] {R} employed by {G}",
        "{G} [employed/employ/employed] {S} as {R}",
        "{S} [earned/earn/earned] a wage as {R} with {G}",
        "{S} [had/have/had] a position as {R} at {G}",
        "{S} [served/serve/served] {G} as {R}",
        "{S} [was/be/been] on the books of {G} as {R}",
        "{S} [made/make/made] a living as {R} for {G}",
        "{G} [kept/keep/kept] {S} on as {R}",
        "{S} [laboured/labour/laboured] as {R} for {G}",
    ),
    "owner": (
        "{O} [belonged/belong/belonged] to {Y}",
        "{Y} [owned/own/owned] {O}",
        "{O} [was/be/been] in the keeping of {Y}",
        "{Y} [kept/keep/kept] {O} in a locked chest",
        "{O} [sat/sit/sat] among the possessions of {Y}",
        "{Y} [possessed/possess/possessed] {O}",
        "{O} [rested/rest/rested] under the roof of {Y}",
        "{Y} [held/hold/held] {O}",
        "{O} [stood/stand/stood] in the parlour of {Y}",
        "{Y} [treasured/treasure/treasured] {O}",
    ),
}

# Framings that leave the statement a plain fact ("" is the unframed sentence, in every split).
FACT_FRAMES: tuple[str, ...] = (
    "The records show that ",
    "It is certain that ",
    "As the ledgers confirm, ",
    "The town books state plainly that ",
    "It is well attested that ",
    "As it turned out, ",
    "In plain fact, ",
    "The parish clerk noted that ",
    "It was duly recorded that ",
    "Sure enough, ",
    "As the register shows, ",
    "Beyond any doubt, ",
)

# Time adverbials carrying no date: "That month, X ..." or "X ... that month".
ADVERBIALS: tuple[str, ...] = (
    "that month",
    "around then",
    "before long",
    "in those weeks",
    "soon after",
    "at about this time",
    "not long after",
    "during that season",
    "in the weeks that followed",
    "shortly afterwards",
    "at that time",
    "in due course",
)

# Asides for facts that do not happen at a time (birth, founding, seat, maker, teacher, IDs):
# "For the record, X ..." or "X ..., for the record".
ASIDES: tuple[str, ...] = (
    "for the record",
    "as it happens",
    "incidentally",
    "as everyone knew",
    "to be precise",
    "truth be told",
    "of course",
    "naturally",
    "in point of fact",
    "as it were",
    "be it noted",
    "as chance had it",
)

# Distractor wrappers: (prefix, suffix, verb form). Verb forms: PAST (the fact's own core), NOT,
# NEVER, "PLAN:<modal>" (modal + base form), "HYP:<modal>" (modal + participle). Every wrapper
# around a PAST core carries a suffix, so cutting the prefix off never leaves a plain fact.
DISTRACTOR_WRAPPERS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "negated": (
        ("", "", "NOT"),
        ("", "", "NEVER"),
        ("", ", whatever the gossip said", "NOT"),
        ("Contrary to rumour, ", "", "NEVER"),
        ("", ", despite what some believed", "NEVER"),
        ("In truth, ", "", "NOT"),
    ),
    "planned": (
        ("", ", but nothing came of it", "PLAN:meant to"),
        ("", ", until the plan fell through", "PLAN:was to"),
        ("", ", but the arrangement was cancelled", "PLAN:had arranged to"),
        ("", ", but it never happened", "PLAN:hoped to"),
        ("", ", when the whole plan was called off", "PLAN:was about to"),
        ("", ", but thought better of it", "PLAN:had promised to"),
    ),
    "rumoured": (
        ("Word went round that ", ", but it was soon denied", "PAST"),
        ("", ", or so the rumour ran, though it proved false", "PAST"),
        ("It was whispered that ", ", a tale later denied", "PAST"),
        ("Gossip had it that ", ", until the story was denied", "PAST"),
        ("", ", the market said, but the rumour was baseless", "PAST"),
        ("Some said that ", ", but they were wrong", "PAST"),
    ),
    "corrected": (
        ("An early entry said that ", ", but the clerk struck it out as an error", "PAST"),
        ("", ", the first report said, though it was later corrected", "PAST"),
        ("The register once stated that ", ", a mistake corrected in the next edition", "PAST"),
        ("", ", according to a notice withdrawn the following week", "PAST"),
        ("A first account held that ", ", but later accounts corrected it", "PAST"),
        ("", ", the gazette printed, then retracted", "PAST"),
    ),
    "hypothetical": (
        ("Had the money come through, ", "", "HYP:would have"),
        ("If the roads had been open, ", "", "HYP:would have"),
        ("", " if the loan had been granted", "HYP:would have"),
        ("With a little more luck, ", "", "HYP:might have"),
        ("", ", had the weather held", "HYP:would have"),
        ("In another year, ", "", "HYP:might have"),
    ),
    "quoted": (
        ("", ", or so {X} claimed", "PAST"),
        ("", ", {X} insisted, though nobody believed it", "PAST"),
        ("{X} told everyone that ", ", but it was not true", "PAST"),
        ("{X} swore that ", ", which was a lie", "PAST"),
        ("", ", according to {X}, who was mistaken", "PAST"),
        ("{X} was heard to say that ", ", though it was false", "PAST"),
    ),
}

# Introductions of a person's alias (nickname or epithet); each aliased person gets exactly one.
ALIAS_INTROS: tuple[str, ...] = (
    "{N} was known along the river as {K}",
    "People called {N} {K}, and the name stuck",
    "To the boatmen, {N} was simply {K}",
    "{N} had long been known as {K}",
    "In the taverns they spoke of {N} as {K}",
    "Everyone at the landing called {N} {K}",
    "{N} answered to the name {K}",
    "{N} went by the name of {K} in those parts",
    "Among the carters, {N} was called {K}",
)

# Epithets: "the lame fiddler". Nouns avoid the employment roles so an epithet never reads as a
# post; the pair is unique within a world.
EPITHET_ADJECTIVES: tuple[str, ...] = (
    "lame", "one-eyed", "red-haired", "grey-bearded", "soft-spoken", "left-handed",
    "sharp-tongued", "broad-shouldered", "quiet", "stooped", "freckled", "limping", "whistling",
    "silver-haired", "scarred", "gap-toothed",
)  # fmt: skip
EPITHET_NOUNS: tuple[str, ...] = (
    "fiddler", "tinker", "lamplighter", "gardener", "beekeeper", "shepherd", "miller",
    "net-mender", "wool trader", "horse dealer", "gatekeeper", "bellringer", "basket weaver",
    "candle maker", "fowler", "ferry keeper",
)  # fmt: skip
