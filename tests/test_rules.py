"""The offline rule extractor (sag_pg.extract.rules): sentence events and typed keys."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

from sag_pg.extract.rules import RuleExtractor
from sag_pg.text.normalize import normalize_key
from sag_pg.types import Chunk, EventDraft, KeyDraft

ROGERS = (
    "Carl Rogers was born in Oak Park, Illinois on January 8, 1902. "
    "He studied at the University of Wisconsin. "
    'Rogers later worked with Abraham Maslow and founded the "Person-Centered Approach".'
)


def chunk(content: str, title: str = "") -> Chunk:
    return Chunk(0, title, content, 1, content.count("\n") + 1)


def keys_of(text: str, *, doc_title: str = "", chunk_title: str = "", summary: str = "") -> list[KeyDraft]:
    event = EventDraft(title="", content=text)
    return RuleExtractor().keys(event, summary=summary, doc_title=doc_title, chunk_title=chunk_title)


# ----------------------------------------------------------------------------------------- events


def test_english_events_are_sentences_with_titles_and_dates() -> None:
    events = RuleExtractor().events(chunk(ROGERS, "Early life"), summary="", doc_title="Carl Rogers")
    assert [(e.title, e.content, e.time) for e in events] == [
        (
            "Carl Rogers was born in Oak Park, Illinois on January 8…",  # cut at a space before 60 chars
            "Carl Rogers was born in Oak Park, Illinois on January 8, 1902.",
            datetime(1902, 1, 8, tzinfo=UTC),
        ),
        (
            # a pronoun says nothing on its own: the subject goes in front
            "Carl Rogers: He studied at the University of Wisconsin",
            "He studied at the University of Wisconsin.",
            None,
        ),
        (
            "Rogers later worked with Abraham Maslow and founded the…",
            'Rogers later worked with Abraham Maslow and founded the "Person-Centered Approach".',
            None,
        ),
    ]
    assert all(e.keys == [] for e in events)  # keys come from keys(), or extract() does both


def test_english_keys() -> None:
    extractor = RuleExtractor()
    events = extractor.extract(chunk(ROGERS, "Early life"), summary="", doc_title="Carl Rogers")
    assert [[(k.type, k.name, k.value) for k in e.keys] for e in events] == [
        [
            ("topic", "Carl Rogers", "Carl Rogers"),  # the subject links every fact of the page
            ("topic", "Early life", "Early life"),
            ("location", "Oak Park", "Oak Park"),  # "in X, Illinois"
            ("location", "Illinois", "Illinois"),
            ("time", "1902", 1902.0),  # "January" is part of the date, not a name
        ],
        [
            ("topic", "Carl Rogers", "Carl Rogers"),
            ("topic", "Early life", "Early life"),
            ("organization", "University of Wisconsin", "University of Wisconsin"),
        ],
        [
            # "Rogers" is Carl Rogers, already the subject; "and" separates two names
            ("topic", "Carl Rogers", "Carl Rogers"),
            ("topic", "Early life", "Early life"),
            ("person", "Abraham Maslow", "Abraham Maslow"),
            ("topic", "Person-Centered Approach", "Person-Centered Approach"),
        ],
    ]


def test_chinese_three_kingdoms_passage() -> None:
    text = "公元200年，曹操与袁绍在官渡展开决战，曹操以少胜多。建安五年，刘备投奔袁绍。他后来病逝于白帝城。"
    extractor = RuleExtractor()
    events = extractor.extract(chunk(text, "三国 > 官渡之战"), summary="", doc_title="三国志")
    assert [(e.title, e.content) for e in events] == [
        (
            "公元200年，曹操与袁绍在官渡展开决战，曹操以少胜多",
            "公元200年，曹操与袁绍在官渡展开决战，曹操以少胜多。",
        ),
        ("建安五年，刘备投奔袁绍", "建安五年，刘备投奔袁绍。"),
        ("三国志: 他后来病逝于白帝城", "他后来病逝于白帝城。"),
    ]
    first, second, third = ({(k.type, k.name): k.value for k in e.keys} for e in events)
    # subject keys: the document title and the chunk's own heading (last part of the heading path)
    assert [(k.type, k.name) for k in events[0].keys[:2]] == [("topic", "三国志"), ("topic", "官渡之战")]
    assert first[("person", "曹操")] == "曹操"
    assert first[("person", "袁绍")] == "袁绍"
    assert first[("location", "官渡")] == "官渡"  # jieba says nr; "在…展开" says place
    assert first[("time", "公元200年")] == 200.0
    assert ("action", "决战") not in first  # jieba's v: a plain verb is not a key
    assert second[("time", "建安五年")] == "建安五年"  # an era year: kept as text
    assert second[("person", "刘备")] == "刘备"
    assert ("topic", "建安") not in second
    assert third[("location", "白帝城")] == "白帝城"
    assert ("action", "病逝") not in third


def test_chinese_dates_and_book_titles() -> None:
    extractor = RuleExtractor()
    (event,) = extractor.extract(
        chunk("北京大学和中国科学院在2008年8月8日合作研究《三国演义》。"), doc_title=""
    )
    assert event.time == datetime(2008, 8, 8, tzinfo=UTC)
    found = {(k.type, k.name, k.value) for k in event.keys}
    assert {
        ("organization", "北京大学", "北京大学"),
        ("organization", "中国科学院", "中国科学院"),
        ("time", "2008年", 2008.0),
        ("topic", "三国演义", "三国演义"),
    } <= found


def test_generations_and_kinds_are_not_keys() -> None:
    """三代 (渔民) is tagged as a time and 综合性大学 looked like a university's name (issue 33): a count of
    generations and a kind of organization are neither; a dynasty stays a time, a university's name a name."""
    keys = {(k.type, str(k.value)) for k in keys_of("林晚秋出身于三代渔民之家，毕业于北溟大学。")}
    assert ("person", "林晚秋") in keys and ("organization", "北溟大学") in keys
    assert not [k for k in keys if k[1] == "三代"]
    keys = {(k.type, str(k.value)) for k in keys_of("北溟大学是一所综合性大学，第三代校长由新一代学者担任。")}
    assert ("organization", "北溟大学") in keys
    assert not [k for k in keys if "综合性" in k[1] or k[0] == "time"], keys
    kinds = ("研究型大学", "开放式博物馆", "研究型", "开放式")
    assert not [k for k in keys_of("清华大学是研究型大学，他在开放式博物馆工作。") if k.value in kinds]
    assert ("time", "唐代") in {(k.type, str(k.value)) for k in keys_of("唐代诗人李白写过这首诗。")}


def test_a_rare_last_character_stays_in_the_name() -> None:
    """jieba's HMM cuts 顾青梧 into 顾青/nr + 梧/ns and 宁吉喆 into 宁吉 + 喆 (the zh-multihop check, rgb-zh): the
    person is the whole name, so the pages that name her meet in one key; a common place character after a
    two-character name (京, 美) is not taken into it. 当代 ("present day") is no time key."""
    for text, name in (("小说获得第五届江海文学奖，作者是顾青梧。", "顾青梧"), ("其妻为作家顾青梧。", "顾青梧"),
                       ("国家统计局局长宁吉喆表示，人口减少。", "宁吉喆")):
        persons = [str(k.value) for k in keys_of(text) if k.type == "person"]
        assert persons == [name], (text, persons)
    keys = {(k.type, str(k.value)) for k in keys_of("顾青梧，1963年生于澄江市，当代女作家。")}
    assert ("person", "顾青梧") in keys and ("location", "澄江市") in keys
    assert not [k for k in keys if k[1] in ("顾青", "当代")], keys
    assert "张伟" in [str(k.value) for k in keys_of("张伟赴美参加会议。") if k.type == "person"]


def test_an_organization_does_not_reach_over_a_common_verb() -> None:
    """代表作有岳城图书馆 was one organization (the one-character verb 有 did not stop the scan back from 图书馆),
    like 中有人民日报 and 有航天科技集团 on rgb-zh; a verb right before the head stays in the name."""
    cases = (("他的代表作有岳城图书馆和多座公共建筑。", "岳城图书馆"),
             ("其中有人民日报社原副总编梁衡。", "人民日报"),
             ("海川制造集团宣布了新的计划。", "海川制造集团"))
    for text, name in cases:
        organizations = [str(k.value) for k in keys_of(text) if k.type == "organization"]
        assert organizations == [name], (text, organizations)


def test_common_words_jieba_calls_places_are_no_places() -> None:
    """jieba's dictionary tags 上市, 深度, 美丽, 湖水, 大桥 as places (ns): as location keys they were "named"
    entities of every question that used them. A place stays one (深圳, 山北省, 白鹭湖)."""
    keys = {(k.type, str(k.value)) for k in keys_of("这家公司2021年在深圳上市，研究的深度和美丽的湖水令人难忘。")}
    assert ("location", "深圳") in keys
    assert not [k for k in keys if k[0] == "location" and k[1] != "深圳"], keys
    assert ("topic", "湖水") in keys and not [k for k in keys if k[1] in ("上市", "美丽")], keys
    keys = {(k.type, str(k.value)) for k in keys_of("白鹭湖引水工程把白鹭湖的湖水引向山北省北部的平原。")}
    assert {("location", "白鹭湖"), ("location", "山北省")} <= keys
    assert not [k for k in keys if k[1] in ("平原",) or (k[0] == "location" and k[1] == "湖水")], keys


def test_a_common_noun_after_zai_is_no_place() -> None:
    """在国家速滑馆举行 made 国家 a location (a topic after 在 and before a verb is promoted, for 在赤壁迎战); one
    such sentence turned the key of 697 rgb-zh events into a "named" place. A common noun stays a topic."""
    keys = {(k.type, str(k.value)) for k in keys_of("男子500米决赛在国家速滑馆举行，价格在市场上涨。")}
    assert not [k for k in keys if k[0] == "location"], keys
    assert ("location", "赤壁") in {(k.type, str(k.value)) for k in keys_of("孙权和刘备的联军在赤壁迎战曹操。")}


def test_tiny_fragments_join_a_neighbour() -> None:
    events = RuleExtractor().events(
        chunk("Yes. Carl Rogers moved to Chicago in 1920. See above."), doc_title=""
    )
    assert [e.content for e in events] == ["Yes. Carl Rogers moved to Chicago in 1920. See above."]


def test_long_sentences_split_at_semicolons() -> None:
    left = (
        "The original version of the game presented the concept of dueling fiends very seriously indeed, " * 2
    )
    right = "when the game was republished by another company the idea was given a humorous spin."
    events = RuleExtractor().events(chunk(f"{left.strip()}; {right}"), doc_title="")
    assert [e.content for e in events] == [f"{left.strip()};", right]


def test_short_sentences_keep_their_semicolons() -> None:
    events = RuleExtractor().events(chunk("Cao Cao won at Guandu; Yuan Shao lost."), doc_title="")
    assert [e.content for e in events] == ["Cao Cao won at Guandu; Yuan Shao lost."]


def test_markdown_lists_tables_links_and_code() -> None:
    content = (
        "- Carl Rogers founded [client-centred therapy](https://example.org).\n"
        "- He taught at the **University of Chicago**.\n"
        "\n"
        "| Year | Event |\n"
        "|------|-------|\n"
        "| 1942 | Counseling and Psychotherapy was published |\n"
        "```\n"
        "code = 'Not an Event. Really.'\n"
        "```\n"
    )
    events = RuleExtractor().events(chunk(content), doc_title="Carl Rogers")
    assert [e.content for e in events] == [
        "Carl Rogers founded client-centred therapy.",
        "He taught at the University of Chicago.",
        "Year, Event 1942, Counseling and Psychotherapy was published",  # a header joins the row below
    ]


def test_code_only_chunk_is_one_event_and_empty_chunk_none() -> None:
    code = "```\nx = 1\n```"
    assert [e.content for e in RuleExtractor().events(chunk(code), doc_title="")] == ["``` x = 1 ```"]
    assert RuleExtractor().events(chunk(""), doc_title="") == []
    assert RuleExtractor().events(chunk("  \n\t"), doc_title="") == []


def test_binary_junk_does_not_crash() -> None:
    junk = bytes(range(256)).decode("latin-1")
    extractor = RuleExtractor()
    for event in extractor.extract(chunk(junk), doc_title="junk"):
        assert event.content
        assert all(k.name for k in event.keys)


# ------------------------------------------------------------------------------------------- keys


def test_years_are_numbers_and_a_bare_year_is_not_an_event_time() -> None:
    (event,) = RuleExtractor().events(chunk("The band formed in 1999 and split in the 2010s."), doc_title="")
    assert event.time is None
    assert keys_of(event.content) == [KeyDraft("time", "1999", 1999.0), KeyDraft("time", "2010s", 2010.0)]


def test_bc_and_ad_years() -> None:
    keys = keys_of("Gotaimbara lived in the 1st century BC and fought in 1200 BC and AD 14.")
    assert [k for k in keys if k.type == "time"] == [
        KeyDraft("time", "1200 BC", -1200.0),
        KeyDraft("time", "AD 14", 14.0),
    ]
    assert all(k.name not in ("BC", "AD") for k in keys)


def test_numbers_that_are_not_years() -> None:
    assert keys_of("It cost $1999 for 3000 units, 2500.5 kg and 45% of 1,999 people.") == []


def test_lower_case_words_are_never_keys() -> None:
    assert keys_of("the cat sat on the mat because it was warm.") == []


def test_sentence_initial_capitals_need_evidence() -> None:
    assert keys_of("Critics praised the film.") == []
    # "Rogers" is capitalised in the document title: a name, here mapped to the full name
    assert keys_of("Rogers died in 1987.", doc_title="Carl Rogers", chunk_title="Death") == [
        KeyDraft("topic", "Carl Rogers", "Carl Rogers"),
        KeyDraft("topic", "Death", "Death"),
        KeyDraft("time", "1987", 1987.0),
    ]
    assert keys_of("Maslow met Rogers.", summary="Abraham Maslow was a psychologist.") == [
        KeyDraft("person", "Abraham Maslow", "Abraham Maslow"),
        KeyDraft("topic", "Rogers", "Rogers"),
    ]


def test_organizations_locations_and_persons() -> None:
    keys = keys_of(
        "Jan Philip Solovej of the University of Copenhagen met Dr. Smith and Li Yujie of Henan University "
        "in Paris, near Lake Geneva, at the American Institute of Physics."
    )
    assert [(k.type, k.name) for k in keys] == [
        ("person", "Jan Philip Solovej"),  # "Jan" before a name is a first name, not January
        ("organization", "University of Copenhagen"),
        ("person", "Smith"),  # after an honorific
        ("person", "Li Yujie"),
        ("organization", "Henan University"),
        ("location", "Paris"),
        ("location", "Lake Geneva"),
        ("organization", "American Institute of Physics"),
    ]


def test_company_head_words_make_organizations() -> None:
    keys = keys_of("Kepler Labs bought Halvard Foods from Ingrid Halvard and Brightwater Robotics.")
    assert [(k.type, k.name) for k in keys if k.type != "time"] == [
        ("organization", "Kepler Labs"),
        ("organization", "Halvard Foods"),  # was typed as a person (issue #20)
        ("person", "Ingrid Halvard"),
        ("organization", "Brightwater Robotics"),
    ]


def test_initials_and_suffixes() -> None:
    assert [(k.type, k.name) for k in keys_of("The Hobbit was written by J. R. R. Tolkien in England.")] == [
        ("person", "J. R. R. Tolkien"),  # named entities outrank plain topics
        ("location", "England"),
        ("topic", "Hobbit"),
    ]
    assert [(k.type, k.name) for k in keys_of("In 2009 Blue Demon Jr. sued the promoters.")] == [
        ("person", "Blue Demon Jr"),
        ("time", "2009"),
    ]


def test_quoted_titles_are_topics_but_quoted_speech_is_not() -> None:
    keys = keys_of(
        'Her single "Hello Love" followed. He said "we will win." Later she released “Summer Rain”.'
    )
    assert [(k.type, k.name) for k in keys] == [("topic", "Hello Love"), ("topic", "Summer Rain")]


def test_subject_is_not_repeated_as_another_key() -> None:
    keys = keys_of(
        "The Prestige is a 2006 film directed by Christopher Nolan.", doc_title="The Prestige (film)"
    )
    assert [(k.type, k.name) for k in keys] == [
        ("topic", "Prestige"),
        ("person", "Christopher Nolan"),
        ("time", "2006"),
    ]


def test_subject_key_is_the_name_as_other_pages_write_it() -> None:
    """A title's disambiguator and leading article go, so the page's subject and a mention of the same name
    on another page are one key (one normalized name), the bridge of multi-hop retrieval."""
    subject = keys_of("It was released in 1989.", doc_title="Adam Clayton Powell (film)")[0]
    mention = keys_of("The film is about Adam Clayton Powell and his career.")[0]
    assert (subject.type, subject.name) == ("topic", "Adam Clayton Powell")
    assert (mention.type, mention.name) == ("person", "Adam Clayton Powell")
    assert normalize_key(subject.name) == normalize_key(mention.name)
    # The phrase rules strip a leading "The" from a mention; the subject is written the same way.
    film = keys_of("Bale starred in The Prestige in 2006.")
    assert ("topic", "Prestige") in [(k.type, k.name) for k in film]
    assert keys_of("He sang.", doc_title="The Prestige (film)")[0].name == "Prestige"
    # Nothing left but function words: the title stays as written.
    assert keys_of("They played.", doc_title="The Who")[0].name == "The Who"
    assert keys_of("Plain text here.", doc_title="Carl Rogers")[0].name == "Carl Rogers"


def test_a_named_disambiguator_is_a_key_of_its_own() -> None:
    keys = keys_of("It opened in 1959.", doc_title="Alexandria International Airport (Louisiana)")
    assert [(k.type, k.name) for k in keys] == [
        ("topic", "Alexandria International Airport"),
        ("location", "Louisiana"),
        ("time", "1959"),
    ]
    # A place after a comma is a disambiguator too: running text writes "born in Rochester, New York" as two keys.
    rochester = keys_of("It lies on Lake Ontario.", doc_title="Rochester, New York")
    assert [(k.type, k.name) for k in rochester][:2] == [("topic", "Rochester"), ("location", "New York")]
    mention = keys_of("He was born in Rochester, New York.")
    assert [normalize_key(k.name) for k in mention][:2] == ["rochester", "newyork"]
    # ... but not any comma: "Israeli presidential election, 2000" is one name.
    assert keys_of("Peres lost.", doc_title="Israeli presidential election, 2000")[0].name == (
        "Israeli presidential election, 2000")
    # A common noun ("film", "director") is not a key: lower-case words never are.
    assert [k.name for k in keys_of("He directed 79 films.", doc_title="David Smith (director)")] == [
        "David Smith"
    ]


def test_keys_are_deduplicated_by_normalized_name() -> None:
    keys = keys_of("Paris and PARIS and paris, then Paris again; 302.AI and 302.Ai.")
    assert [(k.type, k.name) for k in keys] == [("location", "Paris"), ("topic", "302.AI")]


def test_keys_are_capped_most_specific_first() -> None:
    names = ", ".join(f"Person{chr(65 + i)} Smith{chr(65 + i)}" for i in range(15))
    keys = keys_of(f"In 1999 {names} met.", doc_title="Meeting")
    assert len(keys) == 12
    assert keys[0] == KeyDraft("topic", "Meeting", "Meeting")
    assert [k.type for k in keys[1:]] == ["person"] * 11  # names outrank the year once the cap bites


def test_custom_cap() -> None:
    keys = RuleExtractor(max_keys_per_event=2).keys(
        EventDraft("", "Carl Rogers met Abraham Maslow in Chicago in 1950."),
        summary="",
        doc_title="",
        chunk_title="",
    )
    assert [(k.type, k.name) for k in keys] == [("person", "Carl Rogers"), ("person", "Abraham Maslow")]


def test_extraction_is_deterministic() -> None:
    first = RuleExtractor().extract(chunk(ROGERS, "Early life"), doc_title="Carl Rogers")
    second = RuleExtractor().extract(chunk(ROGERS, "Early life"), doc_title="Carl Rogers")
    assert first == second


def test_english_extraction_never_loads_jieba() -> None:
    code = (
        "import sys\n"
        "from sag_pg.extract.rules import RuleExtractor\n"
        "from sag_pg.types import Chunk\n"
        "chunk = Chunk(0, 'T', 'Carl Rogers moved to Chicago in 1920.', 1, 1)\n"
        "RuleExtractor().extract(chunk, doc_title='T')\n"
        "print('jieba' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"




def test_a_chinese_title_that_is_one_name_is_a_key_of_its_type() -> None:
    # The page about a university: its subject is the organization its sentences name, not a topic of the same
    # name (two keys, and a question naming 北溟大学 could not name a topic).
    text = "北溟大学位于临川，创建于1952年。"
    assert (keys_of(text, doc_title="北溟大学")[0].type, keys_of(text, doc_title="北溟大学")[0].name) == \
        ("organization", "北溟大学")
    assert [(k.type, k.name) for k in keys_of("她是一位小说家。", doc_title="林晚秋")][:1] == [("person", "林晚秋")]
    assert [(k.type, k.name) for k in keys_of("临川是一座港口城市。", doc_title="临川")][:1] == [("location", "临川")]
    # A title that is not one name as a whole stays a topic: a novel (南飞 alone would be a person), a book, a
    # project; and a title in Latin script, whatever it names.
    for title in ("候鸟南飞", "三国志", "青岚计划", "Maya Okafor", "Northgate University"):
        assert [(k.type, k.name) for k in keys_of("这是一段文字。", doc_title=title)][:1] == [("topic", title)]
