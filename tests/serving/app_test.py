"""
`create_app` through FastAPI's test client on the fixture tagger: what `allennlp predict` gives,
every bad input a 4xx with a sentence to act on, never a traceback; `GET /health`, `GET /model`
(with and without a manifest entry; the model's name and its archive's file name, no path on the
server's disk), the page's files.
"""

import json
import os
import shutil
import warnings

import pytest

from allennlp.common.checks import ConfigurationError

from ldnet_allennlp.serving.app import INTERNAL_ERROR, create_app
from ldnet_allennlp.serving.inputs import max_body_bytes
from ldnet_allennlp.serving.loaded_tagger import load_tagger
from ldnet_allennlp.tagging.flops import flops_per_token
from tests.conftest import FIXTURES_ROOT, PROJECT_ROOT
from tests.serving.conftest import ARCHIVE, RECORDED_INPUTS, RECORDED_OUTPUTS

with warnings.catch_warnings():
    # starlette 1.x asks for the httpx2 package for its test client; the locked httpx works
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient` is deprecated")
    from fastapi.testclient import TestClient

MAX_CHARS, MAX_SENTENCES = 60, 3


@pytest.fixture(scope="module")
def client(tagger):
    predictor, facts = tagger
    with TestClient(create_app(predictor, facts, MAX_CHARS, MAX_SENTENCES)) as test_client:
        yield test_client


def post(client, body, **kwargs):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post("/predict", content=content, **kwargs)


def test_each_input_gives_what_allennlp_predict_gave(client, tagger):
    predictor, _ = tagger
    for inputs, recorded in zip(RECORDED_INPUTS, RECORDED_OUTPUTS):
        response = post(client, inputs)
        assert response.status_code == 200, response.text
        assert response.json() == recorded
        assert response.headers["server-timing"].startswith("tag;dur=")
    # raw text goes through the predictor's tokenizer; an empty sentence gives empty lists
    for sentence in ["John Smith visited Paris.", "", "Zxqwv Blorfington met Qqq in Ulaanbaatar!"]:
        assert post(client, {"sentence": sentence}).json() == predictor.predict_json(
            {"sentence": sentence}
        )
    # any Content-Type: the body is read as JSON (curl -d sends form-encoded by default)
    form = post(client, RECORDED_INPUTS[0], headers={"Content-Type": "text/plain"})
    assert form.json() == RECORDED_OUTPUTS[0]


def test_a_list_gives_a_list_in_order(client):
    inputs = [RECORDED_INPUTS[2], {"sentence": ""}, RECORDED_INPUTS[0]]
    empty = {"tokens": [], "tags": [], "spans": []}
    assert post(client, inputs).json() == [RECORDED_OUTPUTS[2], empty, RECORDED_OUTPUTS[0]]
    assert post(client, []).json() == []


TOO_LONG = "x" * (MAX_CHARS + 1)
BAD_INPUTS = [
    # (body, status, a fragment of the sentence the client gets)
    (b"", 400, "The request body is empty: send a JSON object such as"),
    (b" \n\t", 400, "The request body is empty"),
    (b"\xff\xfe{}", 400, "The request body is not UTF-8"),
    (b'{"sentence": "a"', 400, "not valid JSON (Expecting ',' delimiter at line 1, column 17)"),
    (b"sentence=John", 400, "not valid JSON"),
    (b"[" * 3000, 400, "nests JSON too deeply"),
    (
        b'"John Smith"',
        422,
        'a JSON object such as {"sentence": "Maria Lopez visited Paris."}, or a '
        'list of them; got a string "John Smith"',
    ),
    (b"42", 422, "got a number 42"),
    (b"null", 422, "got null"),
    (b"{}", 422, 'needs exactly one of the keys "sentence" (raw text) or "tokens"'),
    (b'{"text": "John"}', 422, "it has ['text'], which the tagger does not read"),
    (b'{"sentence": "a", "lang": "en"}', 422, "it has ['lang']"),
    (b'{"sentence": "a", "tokens": ["a"]}', 422, "it has both"),
    (b'{"sentence": 3}', 422, 'The JSON object: "sentence" must be a string; got a number 3.'),
    (b'{"sentence": ["a"]}', 422, '"sentence" must be a string; got a list ["a"]'),
    (b'{"tokens": "John Smith"}', 422, '"tokens" must be a list of non-empty strings'),
    (b'{"tokens": ["John", ""]}', 422, '"tokens" must be a list of non-empty strings'),
    (b'{"tokens": ["John", 1]}', 422, '"tokens" must be a list of non-empty strings'),
    (b'{"tokens": ["John", "\\ud800"]}', 422, "token 1's character 0 is U+D800, a lone surr"),
    (b'{"sentence": "John \\udc00"}', 422, '"sentence" must be Unicode text, but character 5'),
    (b'[{"sentence": "a"}, "b"]', 422, "Item 1 of the list (counting from 0) must be a JSON obj"),
    (b'[{"sentence": "a"}, {"sentence": null}]', 422, 'Item 1 of the list (counting from 0): "s'),
    (json.dumps({"sentence": TOO_LONG}).encode(), 413, f"the text is {MAX_CHARS + 1} characters"),
    (json.dumps({"tokens": ["x" * 30, "y" * 30]}).encode(), 413, "this server takes at most 60"),
    (json.dumps([{"sentence": "a"}] * 4).encode(), 413, "The request holds 4 sentences; this"),
    (b" " * (max_body_bytes(MAX_CHARS, MAX_SENTENCES) + 1), 413, "The request body is over"),
]


@pytest.mark.parametrize("body, status, fragment", BAD_INPUTS, ids=lambda v: repr(v)[:30])
def test_bad_input_gets_a_4xx_with_a_sentence_to_act_on(client, body, status, fragment):
    response = post(client, body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert list(response.json()) == ["detail"]
    assert fragment in response.json()["detail"]
    assert "Traceback" not in response.text


def test_limits_are_named_and_a_body_too_big_is_refused_before_it_is_read(client):
    detail = post(client, [{"sentence": "a"}] * 4).json()["detail"]
    assert "--max-sentences" in detail and "split it into several requests" in detail
    detail = post(client, {"sentence": TOO_LONG}).json()["detail"]
    assert "--max-chars" in detail and "send them as a list" in detail
    response = client.post(
        "/predict", content=b"{}", headers={"Content-Length": str(10**9)}
    )  # a lying Content-Length is enough to refuse
    assert response.status_code == 413


def test_wrong_method_or_path_is_a_json_4xx(client):
    assert client.get("/predict").status_code == 405
    assert client.get("/predict").json() == {"detail": "Method Not Allowed"}
    assert client.get("/nothing-here").status_code == 404
    # FastAPI's docs load scripts from a CDN: not served
    assert client.get("/docs").status_code == 404


def test_an_internal_error_is_a_500_without_its_details(tagger):
    _, facts = tagger

    class BrokenPredictor:
        def predict_batch_json(self, inputs):
            if inputs[0].get("sentence") == "predictor refuses":
                raise ConfigurationError("the predictor's own sentence")
            raise RuntimeError("secret internal detail /home/someone")

    app = create_app(BrokenPredictor(), facts, MAX_CHARS, MAX_SENTENCES)
    with TestClient(app, raise_server_exceptions=False) as broken:
        response = post(broken, {"sentence": "John"})
        assert response.status_code == 500
        assert response.json() == {"detail": INTERNAL_ERROR}
        assert "secret" not in response.text and "Traceback" not in response.text
        refused = post(broken, {"sentence": "predictor refuses"})
        assert refused.status_code == 422
        assert refused.json() == {"detail": "the predictor's own sentence"}
        assert broken.get("/health").json() == {"status": "ok"}  # the worker goes on


def test_health_model_and_page(client, tagger):
    predictor, facts = tagger
    assert client.get("/health").json() == {"status": "ok"}
    model = client.get("/model").json()
    assert model["archive"] == ARCHIVE.name  # the file's name, not where it is
    assert model["name"] is None and model["manifest"] is None and model["test_f1"] is None
    assert "no entry in pretrained/MANIFEST.json" in model["note"]
    assert model["label_encoding"] == "BIOUL" and model["span_types"] == [
        "LOC",
        "MISC",
        "ORG",
        "PER",
    ]
    assert sorted(model["tags"]) == sorted(
        predictor._model.vocab.get_token_to_index_vocabulary("labels")
    )
    # the pruned fixture keeps forward layers 1, 2 and backward 0, 1 of its 3-layer LMs
    assert model["lm_layers_kept"] == {"forward": [1, 2], "backward": [0, 1], "of": 3}
    assert model["flops_per_token"] == pytest.approx(flops_per_token(predictor._model))
    assert model["parameters"] == sum(p.numel() for p in predictor._model.parameters())
    assert model["limits"] == {"max_chars": MAX_CHARS, "max_sentences": MAX_SENTENCES}
    page = client.get("/")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="page.js"></script>' in page.text and "http" not in page.text.lower()
    for name, media_type in [("page.js", "text/javascript"), ("page.css", "text/css")]:
        response = client.get(f"/{name}")
        assert response.headers["content-type"].startswith(media_type)
        assert "http://" not in response.text and "https://" not in response.text  # offline


def absolute_paths(value):
    """Every string in a JSON value that is an absolute path."""
    if isinstance(value, dict):
        return [path for item in value.values() for path in absolute_paths(item)]
    if isinstance(value, list):
        return [path for item in value for path in absolute_paths(item)]
    return [value] if isinstance(value, str) and os.path.isabs(value) else []


def test_the_server_does_not_reveal_where_its_files_are(client):
    # the page shows what /model answers (served_test.py reads it in a browser)
    model = client.get("/model")
    assert absolute_paths(model.json()) == []
    served = [model.text] + [client.get(route).text for route in ["/", "/page.js", "/page.css"]]
    for folder in [ARCHIVE.parent, PROJECT_ROOT]:
        assert not any(str(folder) in text for text in served), folder


def test_a_shipped_model_is_found_by_name_path_or_pretrained_prefix(tmp_path, monkeypatch):
    shipped = tmp_path / "ner_ldnet_pruned.tar.gz"
    shutil.copy(ARCHIVE, shipped)
    shutil.copy(FIXTURES_ROOT / "archives" / "lm_forward.tar.gz", tmp_path / "lm.tar.gz")
    entry = {
        "file": shipped.name,
        "what": "a tiny tagger",
        "kind": "tagger",
        "predictor": "ldnet_tagger",
        "test_f1": 12.5,
        "kept_layers": {"forward": [1, 2], "backward": [0, 1]},
    }
    lm_entry = {"file": "lm.tar.gz", "kind": "dense_language_model"}
    manifest = {"ner": entry, "lm_forward": lm_entry}
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("LDNET_PRETRAINED_DIR", str(tmp_path))
    for model in ["ner", "pretrained:ner", str(shipped)]:
        _, facts = load_tagger(model)
        assert facts["name"] == "ner" and facts["manifest"] == entry, model
        assert facts["archive"] == shipped.name and str(tmp_path) not in json.dumps(facts)
        assert (
            facts["task"] == "ner" and facts["test_f1"] == 12.5 and facts["what"] == entry["what"]
        )
        assert facts["lm_layers_kept"] == {**entry["kept_layers"], "of": 3}
        assert "note" not in facts
    with pytest.raises(
        ConfigurationError, match=r"nor a shipped model's name .*'lm_forward', 'ner'"
    ):
        load_tagger("chunk")
    with pytest.raises(ConfigurationError, match="not a tagger"):
        load_tagger("lm_forward")
    with pytest.raises(ConfigurationError, match="its model .* is not a tagger"):
        load_tagger(str(tmp_path / "lm.tar.gz"))
