import importlib.util
import io
import json
import os
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MORE_TEXT = ROOT / "fixtures" / "lm_text_more"
GAP_RESULTS = ROOT / "benchmarks" / "results" / "lm_corpus_gap_filter.json"
# The real lm_text_more/ (shared data, never in the repository): only the labelled-sample test
# reads it, and skips without it.
SHARED_MORE_TEXT = (
    Path(os.environ.get("LDNET_SHARED_DATA", ROOT.parent / "shared" / "data")) / "lm_text_more"
)
spec = importlib.util.spec_from_file_location(
    "prepare_lm_corpus", ROOT / "scripts" / "prepare_lm_corpus.py"
)
prepare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prepare)


def test_conll_like_tokens():
    text = "Mr. Smith said the U.S. didn't pay $1,000.50 (3.5%) to AT&T's Urdu-speaking unit."
    assert (
        prepare.tokenize(text)
        == (
            "Mr. Smith said the U.S. did n't pay $ 1,000.50 ( 3.5 % ) to AT&T 's "
            "Urdu-speaking unit ."
        ).split()
    )
    assert prepare.tokenize("``no evidence'' that") == ['"', "no", "evidence", '"', "that"]


def test_sentence_split():
    sentences = prepare.text_to_sentences('He said: "No way!" The firm rose 3 pct. 1987 was good.')
    assert [" ".join(s) for s in sentences] == [
        'He said : " No way ! "',
        "The firm rose 3 pct. 1987 was good .",  # "pct." is an abbreviation
    ]


def write_corpus(root: Path) -> None:
    (root / "reuters21578").mkdir(parents=True)
    (root / "reuters21578" / "reut2-000.sgm").write_text(
        "<REUTERS><TEXT><BODY>Profits &lt;rose&gt; sharply.\n    It said\nso. Reuter\n&#3;"
        "</BODY></TEXT></REUTERS>"
    )
    (root / "bbc" / "sport").mkdir(parents=True)
    (root / "bbc" / "sport" / "199.txt").write_bytes(b"Title\n\nIt cost \xa35m today.\n")
    (root / "nltk_data").mkdir()
    for name, members in {
        "abc": {"abc/rural.txt": "Rain fell in the west.\n"},
        "brown": {"brown/ca01": "\n\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n"},
        "state_union": {"state_union/1945-Truman.txt": "Mr. Speaker, we won.\n"},
    }.items():
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, text in members.items():
                archive.writestr(member, text)
        (root / "nltk_data" / f"{name}.zip").write_bytes(buffer.getvalue())
    (root / "wikitext-2").mkdir()
    for split in ("valid", "test"):
        (root / "wikitext-2" / f"{split}.txt").write_text(
            " \n = Heading = \n \n It cost 1 @,@ 000 dollars in a state @-@ of @-@ the @-@ art "
            "<unk> . It was 2 @.@ 5 m long . \n"
        )
    # held-out CoNLL sets beside lm_text/, each with one sentence the corpus also has
    (root.parent / "conll2003").mkdir()
    (root.parent / "conll2003" / "eng.testa").write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n"
    )
    (root.parent / "conll2003" / "eng.testb").write_text(
        "-DOCSTART- -X- -X- O\n\n"
        + "".join(f"{word} X X O\n" for word in "A storm hit the coast on Tuesday .".split())
    )
    (root.parent / "conll2000").mkdir()
    (root.parent / "conll2000" / "test.txt").write_text(
        "".join(f"{word} X O\n" for word in "Mr. Speaker , we won .".split())
    )


def test_end_to_end(tmp_path):
    write_corpus(tmp_path / "lm_text")
    report = prepare.main(
        ["--data-dir", str(tmp_path / "lm_text"), "--output", str(tmp_path / "out")]
    )
    lines = (tmp_path / "out" / "train.txt").read_text().splitlines()
    assert sorted(lines) == sorted(
        [
            "Profits < rose > sharply .",
            "It said so .",  # wrapped line joined, trailing "Reuter" removed
            "Title",
            "It cost £ 5m today .",  # the Latin-1 pound sign
            "Rain fell in the west .",
            'The jury said " no " .',  # Brown tags stripped
        ]
    )  # "Mr. Speaker , we won ." is a CoNLL-00 test sentence
    assert (tmp_path / "out" / "wikitext2_valid.txt").read_text().splitlines() == [
        "It cost 1,000 dollars in a state-of-the-art <unk> .",
        "It was 2.5 m long .",
    ]
    assert report["files"]["train.txt"]["sentences"] == 6
    assert report["sources"]["brown"]["tokens"] == 7
    assert report["sources"]["state_union"]["conll_overlap_removed"] == 1
    assert report["conll_overlap"] == {
        "conll03_dev": {"sentences": 1, "found_and_removed": []},
        "conll03_test": {"sentences": 1, "found_and_removed": []},
        "conll00_test": {"sentences": 1, "found_and_removed": ["Mr. Speaker , we won ."]},
    }
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["files"] == report["files"]


def test_missing_conll_files_stop_the_script(tmp_path, capsys):
    write_corpus(tmp_path / "lm_text")
    (tmp_path / "conll2000" / "test.txt").unlink()
    with pytest.raises(SystemExit):
        prepare.main(["--data-dir", str(tmp_path / "lm_text"), "--output", str(tmp_path / "out")])
    assert "conll2000/test.txt not found: set --conll-dir" in capsys.readouterr().err


def gaps(sentence: str) -> list:
    return prepare.gap_reasons(sentence.split())


def test_gap_reasons_find_the_words_of_removed_links():
    assert gaps(", the of the Republic of Freedonia met the of Sylvania today , ,") == [
        "start",
        "article",
        "punctuation",
    ]
    assert gaps("The club is kept going by members of from many towns .") == ["preposition"]
    assert gaps("( ; December 25 , 1899 – March 3 , 1950 )") == ["punctuation"]
    assert gaps("The council met in , Ohio on Monday .") == ["place"]
    assert gaps("has said the plan would work .") == ["start"]
    assert gaps("He was taken aboard an passenger plane .") == ["article"]
    assert gaps("Fans came from Spain and .") == ["conjunction"]
    assert gaps(f"Councillor Smith {prepare.GAP_MARK} , who voted , left .") == ["spacing"]
    assert gaps("The plan was approved by the") == ["end"]
    for sentence in (
        "The Who played in the park at 7 a . m . on Monday .",
        "She turned herself in .",
        "The FBI ( Federal Bureau of Investigation ) and the NCIS arrested him .",
        "Groups ( a ) and ( b ) voted , and others abstained .",
        "iPhone sales rose 3 % .",
    ):
        assert gaps(sentence) == [], sentence


def test_wikiextractor_paragraphs():
    stats = {"headings_removed": 0, "markup_removed": 0}

    def sentences(paragraph: str) -> list:
        return [" ".join(s) for s in prepare.wikiextractor_sentences(paragraph, stats)]

    assert sentences("Prices &amp; wages rose 3% &lt;br&gt;in May.") == [
        "Prices & wages rose 3 % in May ."
    ]
    assert sentences("History.") == sentences("Related news.") == []
    assert sentences("[[Category:Health]]") == sentences("__NOEDITSECTION__") == []
    assert stats == {"headings_removed": 2, "markup_removed": 2}
    mark = prepare.GAP_MARK
    assert sentences("Smith , who left. He met the of Brazil.") == [
        f"Smith {mark} , who left .",
        "He met the of Brazil .",
    ]
    assert not prepare.is_heading("Tea is older than coffee. It is.")


def test_more_text_end_to_end(tmp_path):
    """The fixtures' counts, by hand: fixtures/lm_text_more/ has 4 Wikinews documents with
    text (the 2nd and 4th are dev with --more-dev-every 2) and 3 Wikipedia ones (the 2nd is
    dev); the Wikinews "A storm hit ..." is planted in CoNLL-03 test, and one sentence of each
    source repeats an earlier one."""
    write_corpus(tmp_path / "lm_text")
    out = tmp_path / "out"
    report = prepare.main(
        ["--data-dir", str(tmp_path / "lm_text"), "--output", str(out)]
        + ["--more-text", str(MORE_TEXT), "--more-dev-every", "2"]
    )
    assert report["sources"]["wikinews"] == {
        "documents": 4,  # the empty record is not a document
        "dev_documents": 2,
        "headings_removed": 1,  # "Voting."
        "markup_removed": 1,  # "__NOEDITSECTION__"
        "gap_removed": 4,  # "of , Ohio", "Smith , who", "has said", "the of Brazil"
        "too_long_removed": 0,
        "conll_overlap_removed": 1,
        "duplicates_removed": 1,  # "The city council approved ..." again
        "sentences": 4,
        "tokens": 9 + 9 + 8 + 7,
        "dev_sentences": 2,
        "dev_tokens": 8 + 7,
        "gap_removed_fraction": 0.4,  # 4 of the 10 sentences read
    }
    assert report["sources"]["wikipedia"] == {
        "documents": 3,  # the third holds only its title
        "dev_documents": 1,
        "headings_removed": 1,  # "History." (title lines are never paragraphs)
        "markup_removed": 0,
        "gap_removed": 1,  # "( ;"
        "too_long_removed": 0,
        "conll_overlap_removed": 0,
        "duplicates_removed": 1,  # "Rain fell in the west ." is an NLTK ABC sentence
        "sentences": 6,
        "tokens": 9 + 6 + 8 + 11 + 11 + 8,
        "dev_sentences": 3,
        "dev_tokens": 11 + 11 + 8,
        "gap_removed_fraction": 0.125,
    }
    assert (out / "dev_wikinews.txt").read_text().splitlines() == [
        "Peter Blackburn said the talks went well .",
        "Officials said 3 people were hurt .",
    ]
    assert (out / "dev_wikipedia.txt").read_text().splitlines() == [
        "Albedo is the fraction of light that a surface reflects .",
        "It is measured on a scale from 0 to 1 .",
        "Snow has a high albedo < 1 .",
    ]
    train = (out / "train.txt").read_text().splitlines()
    assert len(train) == 6 + 2 + 3 and len(set(train)) == len(train)
    assert {
        "The city council approved the budget on Monday .",
        "Prices & wages rose 3 % in May .",
        "Tea and coffee are drinks made from plants .",
        "Tea is older than coffee .",
        "Coffee reached Europe in the 17th century .",
    } < set(train)
    assert report["conll_overlap"]["conll03_test"]["found_and_removed"] == [
        "A storm hit the coast on Tuesday ."
    ]
    assert report["files"]["dev_wikinews.txt"] == {"sentences": 2, "tokens": 15}
    saved = json.loads((out / "report.json").read_text())
    assert saved["sources"]["wikipedia"] == report["sources"]["wikipedia"]


def test_gap_sample_references_read_back_their_sentences(tmp_path):
    """`--gap-sample` writes the drawn sentences' text outside the repository (gap_sample.txt, for
    labelling) and references without text (gap_sample.json) that read back to the same tokens."""
    write_corpus(tmp_path / "lm_text")
    out = tmp_path / "out"
    prepare.main(
        ["--data-dir", str(tmp_path / "lm_text"), "--output", str(out)]
        + ["--more-text", str(MORE_TEXT), "--gap-sample", "6"]
    )
    references = json.loads((out / "gap_sample.json").read_text(encoding="utf-8"))
    texts = (out / "gap_sample.txt").read_text(encoding="utf-8").splitlines()
    assert len(references) == len(texts) == 6
    sample = prepare.gap_sample(str(MORE_TEXT), 6, 13)
    assert [reference for reference, _ in sample] == references
    sentences = prepare.read_sample_sentences(str(MORE_TEXT), references)
    assert sentences == [tokens for _, tokens in sample]
    for number, (reference, tokens, line) in enumerate(zip(references, sentences, texts)):
        text = " ".join(token for token in tokens if token != prepare.GAP_MARK)
        assert line == f"{number}\t{text}"
        assert text not in json.dumps(reference)
        assert reference["sha1"] == prepare.sentence_sha1(tokens)
        assert reference["space_before_punctuation"] == (prepare.GAP_MARK in tokens)
        assert reference["reasons"] == prepare.gap_reasons(tokens)
        assert reference["rule"] == bool(reference["reasons"])
        assert reference["file"] == "wikinews/text/AA/wiki_00"
    # "Councillor Smith , who ..." is the 3rd sentence of the record on line 4 (id 9)
    smith = {"file": "wikinews/text/AA/wiki_00", "line": 4, "doc_id": "9", "sentence_index": 2}
    (tokens,) = prepare.read_sample_sentences(str(MORE_TEXT), [smith])
    assert tokens[:3] == ["Councillor", "Smith", prepare.GAP_MARK]
    with pytest.raises(ValueError, match="no Wikinews record"):
        prepare.read_sample_sentences(str(MORE_TEXT), [dict(smith, doc_id="11")])
    with pytest.raises(ValueError, match="the document has"):
        prepare.read_sample_sentences(str(MORE_TEXT), [dict(smith, sentence_index=9)])


def test_the_labelled_gap_sample_matches_the_rule():
    """benchmarks/results/lm_corpus_gap_filter.json: each hand-labelled Wikinews sentence, as a
    reference into lm_text_more/ (no text in the repository), with the verdict of `gap_reasons`,
    and the precision and recall they give. The sentences are read back from the shared data and
    must be exactly the ones labelled (sha1)."""
    if not (SHARED_MORE_TEXT / "wikinews").is_dir():
        pytest.skip(
            f"{SHARED_MORE_TEXT} is not here: the labelled sample's sentences are read from it "
            "(set LDNET_SHARED_DATA to the shared data folder)"
        )
    results = json.loads(GAP_RESULTS.read_text(encoding="utf-8"))
    sample = results["sample"]
    assert all("sentence" not in row and "text" not in row for row in sample)
    sentences = prepare.read_sample_sentences(str(SHARED_MORE_TEXT), sample)
    counts = {"true_positives": 0, "false_positives": 0, "false_negatives": 0}
    for row, tokens in zip(sample, sentences):
        assert prepare.sentence_sha1(tokens) == row["sha1"], row
        assert (prepare.GAP_MARK in tokens) == row["space_before_punctuation"], row
        assert prepare.gap_reasons(tokens) == row["reasons"], row
        assert row["rule"] == bool(row["reasons"])
        counts["true_positives"] += row["rule"] and row["gap"]
        counts["false_positives"] += row["rule"] and not row["gap"]
        counts["false_negatives"] += row["gap"] and not row["rule"]
    measured = results["gap_filter"]
    assert {key: measured[key] for key in counts} == counts
    assert measured["sentences"] == len(sample) == len({row["sha1"] for row in sample})
    flagged = counts["true_positives"] + counts["false_positives"]
    assert measured["precision"] == round(counts["true_positives"] / flagged, 3)
    gaps_by_hand = counts["true_positives"] + counts["false_negatives"]
    assert measured["recall"] == round(counts["true_positives"] / gaps_by_hand, 3)


def test_more_sources_reads_wikinews_alone(tmp_path):
    """`--more-sources wikinews`: Wikinews' counts and files are those of reading both sources,
    Wikipedia is not read (no counts, no dev file, none of its sentences in train.txt)."""
    write_corpus(tmp_path / "lm_text")
    both, alone = tmp_path / "both", tmp_path / "alone"
    common = ["--data-dir", str(tmp_path / "lm_text"), "--more-text", str(MORE_TEXT)]
    common += ["--more-dev-every", "2"]
    report_both = prepare.main(common + ["--output", str(both)])
    report = prepare.main(common + ["--output", str(alone), "--more-sources", "wikinews"])
    assert sorted(report["sources"]) == sorted(set(report_both["sources"]) - {"wikipedia"})
    assert report["sources"]["wikinews"] == report_both["sources"]["wikinews"]
    assert report["more_sources"] == ["wikinews"]
    assert report_both["more_sources"] == ["wikinews", "wikipedia"]
    assert not (alone / "dev_wikipedia.txt").exists()
    assert (alone / "dev_wikinews.txt").read_text() == (both / "dev_wikinews.txt").read_text()
    train = set((alone / "train.txt").read_text().splitlines())
    assert len(train) == 6 + 2  # lm_text's 6 train sentences and Wikinews' 2
    assert "Tea is older than coffee ." not in train  # a Wikipedia sentence
    assert "The city council approved the budget on Monday ." in train


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--more-sources", "wikibooks"], "unknown: wikibooks"),
        (["--more-sources", ","], "expected some of wikinews, wikipedia"),
        (["--more-sources", "wikipedia", "--gap-sample", "3"], "keep it in --more-sources"),
    ],
)
def test_more_sources_refuses_what_it_cannot_read(tmp_path, capsys, flags, message):
    write_corpus(tmp_path / "lm_text")
    with pytest.raises(SystemExit):
        prepare.main(
            ["--data-dir", str(tmp_path / "lm_text"), "--more-text", str(MORE_TEXT)]
            + ["--output", str(tmp_path / "out")]
            + flags
        )
    assert message in capsys.readouterr().err
