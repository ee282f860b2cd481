"""English names in running text, without a model: capitalised phrases, split and cleaned, then typed.

A phrase is a run of capitalised words ("Carl Rogers", "University of Copenhagen", "J. R. R. Tolkien") with
connectors inside ("of", "de", "van"); it is split at weak connectors and at "X of Organization", stripped
of leading function words and honorifics, and typed as organization (suffix/head words like University,
Inc, Party), location (gazetteer, "in X", "city of X", "X, Illinois", place prefixes like New/San/Fort),
person (2–4 title-case words, or a word after an honorific such as Dr./President) or topic.  Used by the
rule extractor (:mod:`.rules`); the question side is SQL's sag.named_keys (sql/idempotent/032-question.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _names(text: str) -> frozenset[str]:
    return frozenset(name.strip() for name in text.split("|"))


# ---------------------------------------------------------------------------------------- lexicons
# Capitalised only because of their position or grammar; never the start of a name.
_FUNCTION_WORDS = _words(
    """a an the this that these those it its he she they we i you his her hers their our my your him them us
    me in on at by for from with of to into onto upon under over through between among about against
    within without despite after before during when while although though however but and or nor as if
    since because then there here today yesterday tomorrow also many some most all both each every one
    two three four five several few other another such no not what which who whom whose where why how
    according following later meanwhile thus therefore moreover furthermore yet so once finally unlike
    like per via toward towards throughout instead until near beyond whereas whether any much more
    less only even still just now currently formerly originally previously recently is was are were be
    been has had have do does did can could will would shall should may might must let see note"""
)
_MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAY_NAMES = _words("monday tuesday wednesday thursday friday saturday sunday")
_MONTH_FIRST_NAMES = _words("jan may june april august")
_HONORIFICS = _words(
    """mr mrs ms miss dr prof professor sir dame lord lady president king queen prince princess emperor
    empress pope gen colonel col captain capt senator sen governor gov judge rev reverend father
    bishop archbishop cardinal chancellor minister rabbi sheikh sultan chairman ceo"""
) | _words("lieutenant lt sergeant sgt admiral commander cmdr marshal corporal")
# Ranks are honorifics only before a full name ("Lieutenant Arthur Penrose"): the Admiral Twin is a cinema.
_RANKS = _words("lieutenant lt sergeant sgt admiral commander cmdr marshal corporal")
_ORGANIZATION_WORDS = _words(
    """inc inc. corp corporation company co ltd llc plc gmbh ag sa university college institute institution
    academy school association society party church foundation council committee commission agency
    bureau department ministry bank group union league federation club museum library laboratory
    laboratories labs hospital press times journal court army navy corps orchestra band records
    studios studio airlines airways team organization organisation board parliament congress senate
    government administration network systems technologies entertainment publishing publishers
    pictures films broadcasting railway railways police brigade regiment division fc foods food robotics
    motors energy pharmaceuticals pharma holdings industries enterprises software solutions services
    media brewery breweries dynamics aerospace logistics partners ventures capital batteries shipping
    maritime insurance trust mining chemicals securities consulting resorts observatory archive archives
    analytics investments fisheries shipyard telecom gazette herald tribune courier seafood seafoods"""
)
# Heads that make an organization only after a name ("Okoth Engineering", "Seoul Daily", "Blue Harbor Fund"):
# alone, "Engineering" or "Research" is a subject.
_ORGANIZATION_TAIL_WORDS = _words(
    "engineering semiconductor semiconductors health sons brothers daily weekly fund funds research"
)
_PROJECT_WORDS = _words("project projects program programme initiative mission")
_LOCATION_WORDS = _words(
    """city county state province river mountain mountains mount lake island islands valley street avenue
    road bay sea ocean desert kingdom republic coast peninsula district region park square hills
    canyon falls beach harbor harbour airport station bridge township village borough parish
    prefecture estuary fjord glacier strait gulf"""
)
_LOCATION_PREFIXES = _words(
    "new san santa los las fort port mount lake cape saint st east west north south river isle loch"
)
# "St. Luke's Hospital", "Mt. Kenya": an abbreviation whose full stop does not end the name.
_ABBREVIATIONS = frozenset(("St", "Mt", "Ft"))
# "the novel Winter Harbour", "the film Silent Tide": a work is a topic, whatever its words.
_WORK_CUES = _words("novel film movie book album song play opera documentary poem painting musical symphony")
# "joined Brightwave", "played for Atlético Verde": what one joins or plays/works for is an organization.
_SERVICE_VERBS = _words("played plays playing worked works working signed signing")
# "according to X" is no motion: these words before to/from end the search for a motion verb.
_NOT_MOTION = _words("according due prior close next thanks compared relative")
_LOCATION_CUES = _words("in at near outside across")
_PLACE_NOUNS = _words("city town village state province county country region island capital district")
# "the coast of Finnmark", "mayor of Ibadan": the name after "of" is a place.
_PLACE_OF_NOUNS = _PLACE_NOUNS | _words("coast mayor outskirts suburbs suburb centre center port shores")
# "sailed from Longyearbyen", "moved to Bergen", "reached Tromsø": a motion verb before "from"/"to" (or
# before the name itself) makes the name a place.
_MOTION_VERBS = _words(
    """moved moving move moves sailed sailing sail sails flew flying fly travelled traveled travelling
    traveling travel returned returning return emigrated relocated relocating drove driving walked went going
    came coming arrived arriving headed heading fled fleeing migrated commuted retired retiring"""
)
_ARRIVAL_VERBS = _words("reached reaching left leaving visited visiting")
# "the research vessel Kronprins Haakon", "aboard the Fram II": a ship is a topic, not a person.
_SHIP_CUES = _words(
    """vessel ship icebreaker ferry frigate schooner yacht tanker trawler liner steamer steamship submarine
    destroyer cruiser battleship boat aboard"""
)
_SHIP_PREFIXES = _words("ms hms rv ss uss mv hmcs hmas")
# Title-case words that make a two-word phrase something other than a person's name.
_NON_NAME_WORDS = _words(
    """war prize award awards act treaty revolution empire dynasty age era day cup games olympics festival
    series show theory law project program programme bill battle campaign movement award trophy
    championship league conference summit expedition crisis affair agreement accord doctrine plan
    declaration constitution amendment code system model engine language languages music art film
    album song book novel magazine church party factor index effect reporter review report news media
    global international national american british english french german chinese japanese european
    african asian royal general central united federal public private social modern classical ancient
    medieval red blue golden great grand little big high upper lower first second third last final
    annual world grammy oscar emmy nobel records edition version volume part chapter episode season
    tour station channel radio television tv online digital trilogy chronicles chronicle history saga
    legend legends tales tale story stories dice card cards game method algorithm syndrome disease
    principle equation theorem problem test process reaction cycle greater middle territory capital
    palisades telescope satellite rover probe spacecraft"""
)
_NON_NAME_SUFFIXES = ("tion", "sion", "ment", "ness", "ism", "ology", "ics", "ship")
_NAME_SUFFIXES = _words("jr sr")
_ROMAN_RE = re.compile(r"[IVX]{1,5}")
_ERA_MARKERS = _words("bc bce ad ce")
_DEMONYM_SUFFIXES = ("ian", "ese", "ish", "ic")
_PLACE_OR_GROUP = _ORGANIZATION_WORDS | _LOCATION_WORDS
_NAME_PARTICLES = _words("de da del della di du des van von der den la le bin ibn")
_CONNECTORS = _NAME_PARTICLES | _words("of the and for on")
_ORGANIZATION_ONLY_CONNECTORS = _words("and for on")  # "Carl Rogers and Abraham Maslow" is two names
_GAZETTEER = _names(  # countries, continents, US states, big cities: locations without any cue
    """afghanistan|albania|algeria|argentina|armenia|australia|austria|bangladesh|belgium|bolivia|brazil|
    bulgaria|cambodia|canada|chile|china|colombia|croatia|cuba|czech republic|denmark|egypt|england|
    estonia|ethiopia|finland|france|georgia|germany|ghana|greece|hungary|iceland|india|indonesia|iran|iraq|
    ireland|israel|italy|japan|jordan|kenya|korea|north korea|south korea|latvia|lebanon|libya|lithuania|
    malaysia|mexico|mongolia|morocco|nepal|netherlands|new zealand|nigeria|norway|pakistan|peru|
    philippines|poland|portugal|romania|russia|saudi arabia|scotland|serbia|singapore|slovakia|slovenia|
    south africa|spain|sri lanka|sudan|sweden|switzerland|syria|taiwan|thailand|tunisia|turkey|ukraine|
    united kingdom|united states|united states of america|usa|uk|uruguay|venezuela|vietnam|wales|yemen|
    zimbabwe|africa|asia|europe|north america|south america|antarctica|oceania|alabama|alaska|arizona|
    arkansas|california|colorado|connecticut|delaware|florida|hawaii|idaho|illinois|indiana|iowa|kansas|
    kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|mississippi|missouri|montana|
    nebraska|nevada|new hampshire|new jersey|new mexico|new york|north carolina|north dakota|ohio|oklahoma|
    oregon|pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|
    washington|west virginia|wisconsin|wyoming|ontario|quebec|british columbia|london|paris|berlin|rome|
    madrid|moscow|tokyo|beijing|shanghai|hong kong|chicago|boston|los angeles|san francisco|toronto|sydney|
    melbourne|vienna|amsterdam|brussels|copenhagen|stockholm|oslo|dublin|edinburgh|istanbul|cairo|delhi|
    mumbai|seoul|bangkok|manila|jakarta|mexico city|lisbon|athens|prague|warsaw|budapest|hollywood|us|u.s|
    u.s.a|u.k|middle east|great britain|britain"""
)

# ------------------------------------------------------------------------------------------ patterns
_HAN_RANGES = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_LETTER = f"[^\\W_{_HAN_RANGES}]"  # a letter or digit that is not a Han character
# A Latin run next to Han text ends at the script boundary: "Robotics签订合作协议" is "Robotics".
_TOKEN_RE = re.compile(f"{_LETTER}(?:{_LETTER}|['’\\-.&](?={_LETTER}))*")
_NEXT_WORD_RE = re.compile(r"\s+([a-z]+)\b")
_AFTER_COMMA_RE = re.compile(r",\s*([A-Z][a-z]+(?: [A-Z][a-z]+)?)")

_Token = tuple[str, int, int]  # word, start, end


@dataclass
class _Phrase:
    tokens: list[_Token]
    sentence_initial: bool
    after_honorific: bool
    preceding: tuple[str, str]  # the two words before the phrase, lower-cased, nearest last
    following_text: str
    context: tuple[str, ...] = ()  # up to six words before the phrase, lower-cased, within its sentence

    @property
    def words(self) -> list[str]:
        return [token[0] for token in self.tokens]

    def name(self, text: str) -> str:
        """The phrase as written ("J. R. R. Tolkien", "Johnson & Johnson"), possessive removed."""
        name = text[self.tokens[0][1] : self.tokens[-1][2]]
        return name[:-2] if name.endswith(("'s", "’s")) else name


def _is_capitalized(word: str, next_word: str = "") -> bool:
    first = word[0]
    if first.isupper():
        lowered = word.lower()
        if lowered in _ERA_MARKERS:
            return False  # "1st century BC" is a time, handled by the year rules
        if lowered in _MONTHS or lowered in _DAY_NAMES or lowered[:-1] in _DAY_NAMES:
            # "Jan Philip Solovej", "May Britt": a month that is also a first name, before a name
            return lowered in _MONTH_FIRST_NAMES and bool(next_word) and _is_capitalized(next_word)
        return True
    return first.isdigit() and any(ch.isupper() for ch in word)  # 3M, 302.AI


def _capitalized_phrases(text: str) -> list[_Phrase]:
    """Runs of capitalised words joined by spaces, inner connectors (of, the, de, ...) and '&'."""
    tokens: list[_Token] = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    phrases: list[_Phrase] = []
    i = 0
    while i < len(tokens):
        word, start, _ = tokens[i]
        if not _is_capitalized(word, tokens[i + 1][0] if i + 1 < len(tokens) else ""):
            i += 1
            continue
        j = i + 1
        while j < len(tokens):
            previous_word = tokens[j - 1][0]
            gap = text[tokens[j - 1][2] : tokens[j][1]]
            candidate = tokens[j][0]
            initial = gap == ". " and (
                (len(previous_word) == 1 and previous_word.isupper()) or previous_word in _ABBREVIATIONS
            )  # J. R. R. Tolkien, St. Luke's
            after = tokens[j + 1][0] if j + 1 < len(tokens) else ""
            if (gap == " " or initial or gap.strip() == "&") and _is_capitalized(candidate, after):
                j += 1
                continue
            if gap == " " and candidate.lower() in _CONNECTORS:
                k = j
                while k < len(tokens) and k - j < 2 and tokens[k][0].lower() in _CONNECTORS:
                    k += 1
                if (
                    k < len(tokens)
                    and all(text[tokens[m - 1][2] : tokens[m][1]] == " " for m in range(j, k + 1))
                    and _is_capitalized(tokens[k][0])
                ):
                    j = k + 1
                    continue
            break
        gap_before = text[tokens[i - 1][2] : start] if i else text[:start]
        before = [t[0].lower() for t in tokens[max(0, i - 3) : i] if t[0].lower() != "the"][-2:]
        preceding = (before[-2] if len(before) >= 2 else "", before[-1] if before else "")
        honorific = preceding[1] in _HONORIFICS and gap_before.strip() in ("", ".")
        sentence_initial = i == 0 or (not honorific and any(c in '.!?:;"“(\n' for c in gap_before))
        following = text[tokens[j - 1][2] : tokens[j - 1][2] + 40]
        clause = re.split(r"[.!?;:,]\s", text[max(0, start - 80) : start])[-1]
        context = tuple(w.lower() for w in _TOKEN_RE.findall(clause)[-6:])
        phrases.append(_Phrase(tokens[i:j], sentence_initial, honorific, preceding, following, context))
        i = j
    return phrases


def _split_phrase(phrase: _Phrase) -> list[_Phrase]:
    """Cut a capitalised run into the names it holds (see the two helpers below)."""
    return [part for piece in _split_weak_connectors(phrase) for part in _split_person_of_organization(piece)]


def _split_weak_connectors(phrase: _Phrase) -> list[_Phrase]:
    """Split at and/for/on unless the left side is an organization and the right side is not.

    "Carl Rogers and Abraham Maslow": two names; "Department of Science and Technology": one;
    "University of Chicago and Harvard University": two.
    """
    tokens = phrase.tokens
    cuts = [i for i, token in enumerate(tokens) if token[0].lower() in _ORGANIZATION_ONLY_CONNECTORS]
    if not cuts:
        return [phrase]
    groups: list[list[int]] = []
    for begin, end in zip([0] + [c + 1 for c in cuts], [*cuts, len(tokens)], strict=True):
        is_organization = any(t[0].lower() in _ORGANIZATION_WORDS for t in tokens[begin:end])
        if begin == end:
            continue
        of_head = (
            groups
            and tokens[begin - 1][0].lower() in ("for", "on")
            and tokens[groups[-1][1] - 1][0].lower() in _ORGANIZATION_WORDS
        )  # the Standing Committee on Fisheries, the Institute for Marine Research: one name
        if groups and groups[-1][2] and (not is_organization or of_head):
            groups[-1][1] = end
        else:
            groups.append([begin, end, is_organization])
    return [
        _Phrase(
            tokens[begin:end],
            phrase.sentence_initial and number == 0,
            phrase.after_honorific and number == 0,
            phrase.preceding if number == 0 else ("", tokens[begin - 1][0].lower()),
            phrase.following_text if number == len(groups) - 1 else "",
            phrase.context if number == 0 else (),
        )
        for number, (begin, end, _) in enumerate(groups)
    ]


def _split_person_of_organization(phrase: _Phrase) -> list[_Phrase]:
    """ "Li Yujie of Henan University" is a person and a university; "Bank of America" is one name."""
    lowered = [w.lower() for w in phrase.words]
    if "of" not in lowered:
        return [phrase]
    head = phrase.tokens[: lowered.index("of")]
    head_words = [t[0] for t in head]
    if (
        len(head) < 2
        or not _looks_like_person_name(head_words)
        or any(w.lower() in _PLACE_OR_GROUP for w in head_words)
    ):
        return [phrase]
    tail = _Phrase(phrase.tokens[len(head) + 1 :], False, False, ("", "of"), phrase.following_text)
    first = _Phrase(head, phrase.sentence_initial, phrase.after_honorific, phrase.preceding, "", phrase.context)
    return [first, tail]


def _clean_phrase(phrase: _Phrase) -> _Phrase | None:
    tokens = list(phrase.tokens)
    stripped = False
    while tokens and (tokens[0][0].lower() in _FUNCTION_WORDS or tokens[0][0].lower() in _HONORIFICS):
        head = tokens[0][0].lower()
        if head in _SHIP_PREFIXES and tokens[0][0].isupper() and len(tokens) > 1:
            break  # MS Nordkapp is a ship, not Ms. Nordkapp
        if head in _HONORIFICS and len(tokens) > 1 and phrase.preceding[1] in _SHIP_CUES | _WORK_CUES:
            break  # aboard the Queen Adelaide: a ship named after a queen
        if head in _RANKS and len(tokens) < 3:
            break
        if head in _HONORIFICS:
            if len(tokens) == 1:
                return None  # "Dr" of "Dr. Carl Rogers": the name follows as its own phrase
            if tokens[1][0].lower() in _CONNECTORS:
                break  # "President of the United States": a title, keep it whole
            phrase.after_honorific = True
        phrase.preceding = (phrase.preceding[1], head)
        tokens.pop(0)
        stripped = True
    while tokens and (tokens[-1][0].lower() in _CONNECTORS or tokens[-1][0] == "&"):
        tokens.pop()
    if not tokens or all(t[0].lower() in _FUNCTION_WORDS for t in tokens):
        return None
    phrase.tokens = tokens
    phrase.sentence_initial = phrase.sentence_initial and not stripped
    return phrase


def _camel_case(word: str) -> bool:
    """DeepMind, OpenAI, YouTube: a capital inside the word (not McCarthy, MacLeod, DiCaprio, O'Neill)."""
    inner = any(
        ch.isupper() and word[i - 1].islower() and word[i + 1 :].isalpha() for i, ch in enumerate(word) if i >= 3
    )  # not Jean-Luc, not a trailing initial (PersonA)
    return inner and not word.startswith(("Mc", "Mac"))


def _looks_like_person_name(words: list[str]) -> bool:
    name_words = [w for w in words if w.lower() not in _NAME_PARTICLES]
    if any(_camel_case(w) for w in name_words):
        return False
    if len(name_words) >= 2 and (
        name_words[-1].lower() in _NAME_SUFFIXES or _ROMAN_RE.fullmatch(name_words[-1])
    ):
        return True  # Blue Demon Jr., Henry VIII's son
    return (
        2 <= len(name_words) <= 4
        and not any(w.lower().endswith(_NON_NAME_SUFFIXES) for w in name_words)
        and all(
            w[0].isupper() and (len(w) == 1 or not w.isupper()) and re.sub(r"['’-]", "", w).isalpha()
            for w in name_words
        )
        and not any(re.sub(r"['’]s$", "", w.lower()) in _NON_NAME_WORDS for w in name_words)
    )


def _classify(phrase: _Phrase, name: str) -> str:
    lowered = [re.sub(r"['’]s$", "", w.lower().rstrip(".")) for w in phrase.words]
    if phrase.preceding[1] in _SHIP_CUES | _WORK_CUES or (len(lowered) >= 2 and lowered[0] in _SHIP_PREFIXES):
        return "topic"  # the research vessel Kronprins Haakon, MS Nordkapp, the novel Winter Harbour
    if any(w in _ORGANIZATION_WORDS for w in lowered) or (
        any(w in _ORGANIZATION_TAIL_WORDS for w in lowered[1:])
    ):
        return "organization"
    if len(lowered) >= 2 and lowered[-1] in _PROJECT_WORDS:
        return "topic"  # the Aurora Grid Initiative, the Qinglan Project: a project, as 青岚计划 is
    if name.lower() in _GAZETTEER or any(w in _LOCATION_WORDS for w in lowered[1:]):
        return "location"
    if len(lowered) >= 2 and (
        lowered[0] in _LOCATION_PREFIXES
        or (lowered[1] == "of" and lowered[0] in _PLACE_NOUNS | _LOCATION_WORDS)
    ):
        return "location"  # New Haven, Fort Worth, City of London, Kingdom of Denmark
    next_word = _NEXT_WORD_RE.match(phrase.following_text)
    used_as_noun = next_word is None or next_word.group(1) in _FUNCTION_WORDS  # not "in Chinese mythology"
    demonym = len(lowered) == 1 and lowered[0].endswith(_DEMONYM_SUFFIXES)  # "in Akkadian and Sumerian myths"
    before, last = phrase.preceding
    moved = (
        last in _ARRIVAL_VERBS
        or last in _MOTION_VERBS
        or (last in ("from", "to", "for") and before in _MOTION_VERBS)
        or (
            last in ("from", "to")
            and before not in _NOT_MOTION
            and any(w in _MOTION_VERBS for w in phrase.context[-4:-1])
        )
    )  # sailed from Longyearbyen, moved to Bergen, reached Tromsø, moved its headquarters to Plymouth
    if (
        used_as_noun
        and not demonym
        and (last in _LOCATION_CUES or (last == "of" and before in _PLACE_OF_NOUNS) or moved)
    ):
        return "location"  # in Chicago, the city of Chicago
    after_comma = _AFTER_COMMA_RE.match(phrase.following_text)
    if after_comma is not None and after_comma.group(1).lower() in _GAZETTEER:
        return "location"  # Oak Park, Illinois
    if name.lower() not in _GAZETTEER and last == "for" and before in _SERVICE_VERBS:
        return "organization"  # played for Atlético Verde, worked for Halden
    if phrase.after_honorific:
        return "person"
    if "&" in name:
        return "topic"  # Peace & Love, Simon & Schuster: not one person
    return "person" if _looks_like_person_name(phrase.words) else "topic"


_Found = tuple[_Phrase, str, str, str]  # cleaned phrase, name as written, key type, uncleaned name


def _analyse(text: str) -> tuple[list[_Found], frozenset[str], tuple[str, ...]]:
    """Typed phrases of ``text``, the words it capitalises other than at a sentence start, its persons."""
    found: list[_Found] = []
    capitalized: set[str] = set()
    persons: list[str] = []
    for raw in _capitalized_phrases(text):
        for phrase in _split_phrase(raw):
            if not phrase.sentence_initial or len(phrase.tokens) > 1:
                capitalized.update(phrase.words)
            uncleaned = phrase.name(text)
            cleaned = _clean_phrase(phrase)
            if cleaned is None:
                continue
            name = cleaned.name(text)
            key_type = _classify(cleaned, name)
            if found and key_type in ("topic", "person") and len(cleaned.tokens) == 1:
                previous = found[-1]
                gap = text[previous[0].tokens[-1][2] : cleaned.tokens[0][1]].strip().lower()
                if previous[2] == "location" and gap in ("to", "and", "or"):
                    key_type = "location"  # from Longyearbyen to Svalbard
            found.append((cleaned, name, key_type, uncleaned))
            if key_type == "person" and len(cleaned.tokens) >= 2:
                persons.append(name)
    return found, frozenset(capitalized), tuple(persons)
