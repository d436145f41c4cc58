"""Invented names from a small syllable grammar.

Names are built from onset + vowel + coda syllables so that no pretrained model can know anything
about them. A short list of common English words is rejected so a name does not read as a word,
and every name token is unique within one world (a regex for a name never hits another name).
"""

from __future__ import annotations

import random

# Repeated entries are cheap weights: plain consonants and vowels dominate, clusters are rare.
_ONSETS = (
    "b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "b", "d", "k",
    "l", "m", "n", "r", "s", "t", "v", "br", "dr", "gr", "kr", "st", "th", "tr", "sh", "j",
)  # fmt: skip
_NUCLEI = (
    "a", "e", "i", "o", "u", "a", "e", "i", "o", "a", "e", "o", "ae", "ei", "ou", "y",
)  # fmt: skip
_CODAS = ("", "", "", "", "n", "r", "l", "s", "th", "k", "m", "rn", "ld", "x", "v", "nd", "sh")

# Toponym endings: give places a recognisable shape without being real places.
_PLACE_ENDINGS = (
    "moor", "holt", "wick", "mere", "ford", "stead", "dale", "thorp", "haven", "reach",
    "marsh", "fell", "gate", "cross", "burrow", "ness",
)  # fmt: skip

# Common English words a 1-3 syllable grammar can spell. Cheap guard, not exhaustive.
_ENGLISH_WORDS = """
    able aker also area army away baby back bake band bank bare base bath bear beat been beer
    bell belt best bike bill bird bite blue boat body bold bone book born boss both burn busy cake
    call calm came camp card care case cash cast cell chat chin city clay coal coat code cold come
    cook cool cope copy core cost crew crop dare dark data date dawn days dead deal dean dear debt
    deep deny desk diet dirt disk dive does done door dose down draw drew drop drug dual duke dust
    duty each earn ease east easy edge else even ever evil exit face fact fail fair fall fame farm
    fast fate fear feed feel feet fell felt file fill film find fine fire firm fish five flat flow
    food foot ford form fort four free from fuel full fund gain game gate gave gear gene gift girl
    give glad goal goes gold golf gone good gray grew grey grow gulf hair half hall hand hang hard
    harm hate have head hear heat held hell help here hero high hill hire hold hole holy home hope
    host hour huge hung hunt hurt idea inch into iron item jack jane jean john join joke jury just
    keen keep kent kept kick kill kind king knee knew know lack lady laid lake land lane last late
    lead left less life lift like line link list live load loan lock logo long look lord lose loss
    lost love luck made mail main make male many mark mass matt meal mean meat meet menu mere mike
    mile milk mill mind mine miss mode mood moon more most move much must name navy near neck need
    news next nice nick nine none nose note okay once only onto open oral over pace pack page paid
    pain pair palm park part pass past path peak pick pink pipe plan play plot plug plus poll pool
    poor port post pull pure push race rail rain rank rare rate read real rear rely rent rest rice
    rich ride ring rise risk road rock role roll roof room root rose rule rush ruth safe said sake
    sale salt same sand save seat seed seek seem seen self sell send sent shed ship shop shot show
    shut sick side sign sing site size skin slip slow snow soft soil sold sole some song soon sort
    soul spot star stay step stop such suit sure take tale talk tall tank tape task team tech tell
    tend term test text than that them then they thin this thus till time tiny told toll tone tony
    took tool tour town tree trip true tune turn twin type unit upon used user vary vast very vice
    view vote wage wait wake walk wall want ward warm wash wave ways weak wear week well went were
    west what when whom wide wife wild will wind wine wing wire wise wish with wood word wore work
    yard yeah year your zero zone baker maker taker river sister mister master lover rover never
    lever fever water later paper tiger timer mayor major minor motor rotor solar polar lunar sugar
    tumor humor honor valor vapor labor manor donor tenor raven haven seven given liver silver
    shiver banner dinner winner summer hammer ladder rather father mother other brother nether
    tether feather leather weather wither zither dither thither hither whither sober somber
    member number lumber timber amber ember under thunder wonder yonder ponder cinder tinder
    binder finder kinder render tender gender lender sender vendor bandit habit rabbit market
    basket casket gasket jacket racket packet rocket pocket socket locket ticket wicket picket
    thicket cricket kitten mitten bitten rotten cotton button mutton sudden hidden ridden madden
    soda sofa data visa diva lava java nova kilo silo solo polo hero zero hobo judo
"""
COMMON_WORDS = frozenset(_ENGLISH_WORDS.split())


def _is_pleasant(word: str) -> bool:
    """Reject names that are hard to read or collide with everyday English."""
    if len(word) < 4 or len(word) > 10 or word in COMMON_WORDS:
        return False
    vowels = "aeiouy"
    run = 0
    for ch in word:
        run = 0 if ch in vowels else run + 1
        if run > 3:
            return False
    vowel_run = 0
    for ch in word:
        vowel_run = vowel_run + 1 if ch in vowels else 0
        if vowel_run > 2:
            return False
    return True


class NameGrammar:
    """Draws unique capitalised names from one seeded random stream."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._used: set[str] = set()  # membership only; never iterated (order would leak)

    def _syllable(self, coda: bool) -> str:
        rng = self._rng
        onset = _ONSETS[int(rng.random() * len(_ONSETS))]
        nucleus = _NUCLEI[int(rng.random() * len(_NUCLEI))]
        end = _CODAS[int(rng.random() * len(_CODAS))] if coda else ""
        return onset + nucleus + end

    def _fresh(self, build) -> str:
        for _ in range(1000):
            word = build()
            low = word.lower()
            if _is_pleasant(low) and low not in self._used:
                self._used.add(low)
                return word[:1].upper() + word[1:]
        raise RuntimeError("name grammar exhausted")  # pragma: no cover - 1e4+ names available

    def claim(self, word: str) -> bool:
        """Reserve an externally built token; False when it is already taken or unpleasant."""
        low = word.lower()
        if low in self._used or not _is_pleasant(low):
            return False
        self._used.add(low)
        return True

    def word(self, syllables: int = 2) -> str:
        """A plain invented word of `syllables` syllables (given names, roots)."""

        def build() -> str:
            parts = [self._syllable(coda=False) for _ in range(syllables - 1)]
            parts.append(self._syllable(coda=True))
            return "".join(parts)

        return self._fresh(build)

    def given_name(self) -> str:
        return self.word(2 if self._rng.random() < 0.8 else 3)

    def family_name(self) -> str:
        return self.word(2 if self._rng.random() < 0.7 else 3)

    def place_name(self) -> str:
        rng = self._rng

        def build() -> str:
            root = self._syllable(coda=True)
            if rng.random() < 0.45:
                root += self._syllable(coda=False)
            if rng.random() < 0.7:
                return root + _PLACE_ENDINGS[int(rng.random() * len(_PLACE_ENDINGS))]
            return root + self._syllable(coda=True)

        return self._fresh(build)

    def near_miss(self, name: str) -> str | None:
        """A distinct name one small edit away from `name` (a distractor, not an alias)."""
        rng = self._rng
        low = name.lower()
        vowels = "aeiou"
        for _ in range(40):
            i = int(rng.random() * len(low))
            ch = low[i]
            if ch in vowels:
                repl = vowels[int(rng.random() * len(vowels))]
                cand = low[:i] + repl + low[i + 1 :]
            elif i == len(low) - 1:
                cand = low + vowels[int(rng.random() * len(vowels))]
            else:
                continue
            if cand != low and self.claim(cand):
                return cand[:1].upper() + cand[1:]
        return None
