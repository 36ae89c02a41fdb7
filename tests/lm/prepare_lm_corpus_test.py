import importlib.util
import io
import json
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
            "Mr. Speaker , we won .",
        ]
    )
    assert (tmp_path / "out" / "wikitext2_valid.txt").read_text().splitlines() == [
        "It cost 1,000 dollars in a state-of-the-art <unk> .",
        "It was 2.5 m long .",
    ]
    assert report["files"]["train.txt"]["sentences"] == 7
    assert report["sources"]["brown"]["tokens"] == 7
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["files"] == report["files"]
