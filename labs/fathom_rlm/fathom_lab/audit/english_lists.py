"""English word lists for reading a verdict sentence (`english_reader.py`).

Written by hand from general English and from the verdicts of `train` documents, with no table of
the generator and no held-out text: the verbs that back what they act on ("upheld", "endorsed")
and those that reject it ("quashed", "refuted"), the outcome nouns that are a ruling ("the
decree") and those that are a challenge ("the appeal"), and the phrases that make the first
clause's object an attack on the statement ("the doubts about it") or the record itself ("the
register"). Most of each list is ordinary English that no `train` verdict uses; a held-out word
the lists lack is signed by the document's own sign search (`english_reader.py`).

Verbs are in their base form (`english_reader.lemmas` takes a past tense back to it).
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z][a-z'-]*", text.lower()))


# Verbs that back, accept or confirm what they act on.
APPROVE_VERBS = _words("""
uphold affirm ratify welcome champion bolster corroborate second allow favour favor confirm endorse
indorse support back accept approve sustain validate verify vindicate certify sanction authenticate
substantiate attest vouch defend embrace acknowledge recognise recognize grant admit credit believe
trust praise applaud commend hail adopt seal countersign witness reaffirm reinforce strengthen
buttress underscore underpin justify honour honor respect heed bless okay pass carry concede agree
echo restate maintain keep preserve retain stamp prove demonstrate establish accredit license
licence authorize authorise empower legitimize legitimise legalize legalise enact enshrine canonize
canonise consecrate laud extol exalt celebrate cheer salute acclaim cherish treasure value prize
esteem admire like love relish greet receive entertain countenance tolerate condone permit
approbate fortify shore prop brace undergird steady stabilize stabilise amplify boost promote
advocate espouse sponsor patronize patronise further advance aid assist help abet protect guard
shield safeguard side rally concur assent consent accede acquiesce subscribe homologate notarize
notarise warrant guarantee ensure assure reassure avow aver assert declare proclaim pronounce
reiterate clear exonerate absolve acquit excuse pardon forgive redeem rehabilitate restore
reinstate revive renew readopt compliment eulogize eulogise glorify lionize lionise venerate revere
honour reward prefer choose select elect embrace applaud corroborate underwrite cosign co-sign
signed approve applaud vouchsafe ordain decree mandate codify formalize formalise finalize finalise
perfect consummate complete enforce implement obey abide greenlight okay crown anoint ennoble fete
garland reconfirm re-endorse reratify evidence underline hallow accord laurel rubber-stamp bless
champion toast clinch
""")

# Verbs that reject, attack or undo what they act on.
REJECT_VERBS = _words("""
rebut mock challenge spurn condemn quash overturn contradict disprove dispute refute reject deny
dismiss repudiate discredit debunk strike annul void nullify invalidate rescind revoke reverse
vacate overrule scorn deride ridicule scoff sneer belittle doubt question query contest impugn
assail attack denounce decry deplore censure criticise criticize fault undermine undercut weaken
expose unmask discount disregard ignore snub rebuff refuse veto block bar forbid disallow negate
counter oppose resist protest object disavow disown renounce retract withdraw recant abandon
expunge erase delete scrap cancel abolish abrogate squash crush dash demolish shred gainsay belie
falsify confute controvert rebuke reprove reproach upbraid lambaste lambast slam pan trash jeer
taunt lampoon parody satirize satirise caricature disdain despise detest loathe hate abhor execrate
vilify malign slander libel defame smear disparage denigrate deprecate depreciate diminish minimize
minimise trivialize trivialise dispel scotch squelch stifle suppress smother silence muzzle gag
censor ban prohibit outlaw proscribe interdict embargo boycott shun eschew forsake desert ditch
dump drop discard jettison junk repeal override overthrow topple upset subvert sabotage thwart foil
frustrate defeat rout confound puncture deflate explode shatter wreck ruin destroy dismantle
unravel undo nix spike kill axe sink torpedo scuttle derail dissent demur disagree discountenance
disapprove deplore blame accuse indict arraign impeach incriminate reprimand admonish chide scold
berate castigate chastise excoriate flay pillory savage maul blast rubbish heckle barrack boo hiss
catcall contemn slight insult affront flout defy disobey breach violate contravene infringe
transgress wrangle confront disbelieve distrust mistrust suspect countermand dissolve terminate
halt suspend stay shelve repel repulse parry deflect fend invalidate overset disclaim abjure
forswear retract reverse unseat depose oust dethrone supersede quell dismiss overrule decline spurn
sideline marginalize marginalise rubbish traduce calumniate asperse revile berate denigrate
disprove discredit contest protest impeach challenge rebuff besmirch sully tarnish eviscerate gut
ostracize ostracise spoof tease needle bewail rue regret lament bemoan scrub blot efface obliterate
excise purge redact correct emend rectify amend revise disbelieve brush shrug cold-shoulder trounce
pillory rubbish second-guess disclaim sap erode impair damage upend neutralize neutralise scupper
unpick derogate travesty burlesque
""")

IRREGULAR_PAST: dict[str, str] = {
    "upheld": "uphold",
    "struck": "strike",
    "stricken": "strike",
    "withdrew": "withdraw",
    "withdrawn": "withdraw",
    "forbade": "forbid",
    "forbidden": "forbid",
    "overrode": "override",
    "overridden": "override",
    "overthrew": "overthrow",
    "overthrown": "overthrow",
    "kept": "keep",
    "bore": "bear",
    "borne": "bear",
    "forsook": "forsake",
    "forsaken": "forsake",
    "undid": "undo",
    "undone": "undo",
    "sank": "sink",
    "sunk": "sink",
    "forswore": "forswear",
    "forsworn": "forswear",
    "overset": "overset",
    "upset": "upset",
    "shed": "shed",
    "underwrote": "underwrite",
    "underwritten": "underwrite",
    "gainsaid": "gainsay",
    "belied": "belie",
    "stood": "stand",
    "withstood": "withstand",
    "mistook": "mistake",
    "forgave": "forgive",
    "forgiven": "forgive",
    "chose": "choose",
    "chosen": "choose",
    "laid": "lay",
    "paid": "pay",
    "spat": "spit",
    "threw": "throw",
    "thrown": "throw",
    "beat": "beat",
    "beaten": "beat",
    "overcame": "overcome",
    "overcome": "overcome",
    "broke": "break",
    "broken": "break",
    "blessed": "bless",
    "blest": "bless",
    "sought": "seek",
    "lent": "lend",
    "held": "hold",
}
"""Past forms that do not end in "-ed", and their base form."""

# Outcome nouns of the second clause: a ruling, decision or finding (backs what was done) ...
RULING_NOUNS = _words("""
finding outcome proclamation edict decree arbitration decision pronouncement precedent attestation
assessment settlement judgment judgement ruling verdict determination resolution conclusion opinion
order award adjudication declaration certification confirmation endorsement approval charter writ
mandate warrant holding report appraisal evaluation estimate audit statute ordinance bylaw byelaw
accord agreement compromise verification validation affirmation covenant treaty concordat
dispensation directive dictum fiat ukase rescript act law code canon rule regulation provision
stipulation grant licence license permit patent concession certificate credential testimonial
commendation recommendation announcement statement communique bulletin manifesto avowal assertion
affidavit deposition testimony evidence proof corroboration substantiation authentication seal
signature imprimatur blessing consent assent acceptance ratification acknowledgement acknowledgment
recognition accreditation authorization authorisation permission clearance vindication consensus
concurrence reconciliation mediation conciliation deal bargain pact arrangement understanding truce
armistice result upshot record minute minutes register account summary digest survey study inquest
investigation examination analysis diagnosis reckoning tally census calculation computation
measurement valuation rating ruling sentence adjudgment arbitrament arbitrement determination
advice finding findings verdict assize judgement decretal dictate precept pronunciamento protocol
formula accordance concordance attestment approbation endorsation confirmance certitude guarantee
assurance warranty pledge promise oath vow undertaking compact contract convention bond deed
instrument indenture enactment legislation measure resolve ordainment ordinance establishment
validation verification disposition instruction placet nod testament diploma estimation
ascertainment cognizance accounting inventory count adjustment dictate bull
""")

# ... or a challenge, complaint or reversal (attacks what was done).
CHALLENGE_NOUNS = _words("""
grievance retort counterclaim protest suit countercharge indictment disavowal annulment exception
reproof appeal objection complaint challenge petition rebuttal refutation rejoinder riposte
counterargument counterpoint denial repudiation retraction recantation revocation rescission
reversal nullification cancellation invalidation veto demurrer demurral charge accusation
allegation impeachment censure rebuke reprimand admonition admonishment condemnation denunciation
dissent caveat lawsuit litigation plea remonstrance remonstration contestation dispute quarrel
query doubt qualm misgiving correction erratum amendment withdrawal contention counterstatement
counterblast counterattack countermand counterproposal countersuit counteraction reproach
reprehension criticism critique stricture rebuff rejection dismissal disclaimer disclamation
renunciation abjuration negation contradiction disproof confutation impugnment opposition
resistance defiance dissension disagreement demur cavil quibble gripe grouse grumble moan plaint
outcry clamour clamor uproar furore furor backlash expostulation deprecation arraignment
prosecution libel slander calumny aspersion smear slur insinuation innuendo imputation counter
comeback recourse redress protestation reservation abrogation repeal rescindment voidance abatement
quashing overturning overruling cassation vacatur nullity disallowance suspension stay inhibition
prohibition interdiction interdict ban embargo indictment incrimination recrimination retaliation
reprisal rebuttal surrebuttal surrejoinder replication counterplea counterpetition counterappeal
counterdemand counterchallenge contradiction disclamation retractation abjurement forswearing
denouncement disapproval disapprobation objurgation reproval chiding scolding castigation
admonishment reprobation blame accusal delation charge-sheet complaint counterclaim counterplea
cross-claim crossclaim cross-appeal appeal challenge refusal rebuff veto disputation controversy
wrangle niggle question disbelief incredulity counterorder corrigendum emendation rectification
revision gainsaying debunking jibe gibe taunt jeer sneer mockery derision ridicule scorn disdain
contempt insult affront contest animadversion obloquy opprobrium vilification disparagement
derogation impugnation gainsay contravention quashal defeasance recision
""")

CHALLENGE_OBJECT = re.compile(
    r"\bagainst\b|\babout it\b|\bover it\b|\bmis(?:read|reading|take|taken|print|copy|copying|"
    r"entry|statement|count|dating|date|spelling|hearing|report)s?\b|\bdoubts?\b|\bslanders?\b|"
    r"\bgossip\b|\bmutter|\brumou?rs?\b|\bunease\b|\bwhisper|\bsuspicion|\bcharges?\b|"
    r"\baccusations?\b|\ballegations?\b|\bcomplaints?\b|\bobjections?\b|\bmisgivings?\b|"
    r"\bqualms?\b|\bquestions?\b|\bquer(?:y|ies)\b|\berrors?\b|\bslip\b|\bhearsay\b|\bgrumbl|"
    r"\bmurmur|\bsmears?\b|\blibel|\bcalumn|\baspersions?\b|\bwrong|\bfalse|\bforger|\bforged\b|"
    r"\bfake|\blies\b|\bscandal|\binnuendo|\binsinuat|\bworr(?:y|ies)\b|\bfears?\b|\bconcerns?\b|"
    r"\bprotests?\b|\bquibbles?\b|\bcavil|\bscepticism\b|\bskepticism\b|\bdistrust\b|\bmistrust\b|"
    r"\bdissent\b|\bdisputes?\b|\bdenials?\b|\battacks?\b|\bchallenges?\b|\bcriticism|\bcomplaint|"
    r"\bsuspicions?\b|\bsneers?\b|\bjibes?\b|\bjeers?\b|\btaunts?\b|\bslurs?\b|\bcharge\b|"
    r"\bclaims? of (?:error|forgery|a mis)"
)
"""Words of the first clause's object that make it an attack on the statement ("the doubts
about it", "the charge of a misreading")."""
RECORD_OBJECT = re.compile(
    r"\brecords?\b|\bregisters?\b|\bregistry\b|\brolls?\b|\bledger|\bbooks?\b|\bentry\b|"
    r"\bentries\b|\bline\b|\bpages?\b|\btestimony\b|\bnotice\b|\baccount\b|\bchronicle|"
    r"\bannals?\b|\bcharter\b|\bdeeds?\b|\bdocuments?\b|\bcertificate\b|\binscription\b|"
    r"\bminutes\b|\bfile\b|\bnote\b|\bcensus\b|\blist\b|\btally\b|\bletter\b|\bscroll\b|"
    r"\btablet\b|\bplaque\b|\barchives?\b|\bstatement\b|\bclaim\b|\bword\b|\bsaid\b|\bwrote\b|"
    r"\bwritten\b|\bwrit\b|\bstory\b|\bversion\b|\boath\b|\baffidavit\b|\bdeposition\b|"
    r"\bevidence\b|\bproof\b|\battestation\b|\broster\b|\bcalendar\b|\bregistrar's\b|\bclerk's\b|"
    r"\bcopy\b|\bextract\b|\btranscript\b|\bindex\b|\bdiary\b|\bjournal\b|\blog\b|\bparish\b|"
    r"\bmemorandum\b|\bmemo\b|\bnotes\b|\bentry's\b"
)
"""Words of the first clause's object that make it the record itself ("the register")."""
NEGATOR = re.compile(
    r"^(?:no|not|nobody|none|neither|never|nothing|nor|no-one|noone|hardly|scarcely|barely|few)\b|"
    r"\bno one\b|\bnot\b|\bnever\b|\bnobody\b|\bnone\b|\bneither\b|\bnor\b|n't\b",
    re.I,
)
"""A negation in a clause's subject ("Not one of the elders", "nobody")."""

TEACHER_FIRST = re.compile(
    r"\b(?:taught|instructed|trained|tutored|mentored|schooled|coached|drilled|educated|"
    r"apprenticed (?!to\b)|initiated|raised|guided|groomed|prepared|formed|shaped|reared|"
    r"took\b.{1,60}\b(?:as|on as|in as|under (?:his|her|their) wing)|"
    r"(?:accepted|received|admitted|welcomed|adopted|engaged|hired|enrolled|kept) "
    r".{1,60}\bas (?:a |an |his |her |their )?"
    r"(?:pupil|apprentice|student|disciple|protege|protégé|ward|learner|novice|trainee|scholar))",
)
"""A teacher as the grammatical subject: the ways English says "X taught Y" ("X took Y on as a
pupil", "X instructed Y")."""
PUPIL_FIRST = re.compile(
    r"\b(?:was|were|had been|been|being) (?:\w+ )?(?:taught|instructed|trained|tutored|mentored|"
    r"schooled|coached|educated|apprenticed|raised|guided|groomed|reared|taken)\b|"
    r"\b(?:studied|learned|learnt|trained|apprenticed|served|sat|read)\b"
    r".{0,30}\b(?:under|with|to|at the feet of|beside)\b"
)
"""... unless the sentence is passive or its subject is the pupil ("was taught by", "studied
under")."""
