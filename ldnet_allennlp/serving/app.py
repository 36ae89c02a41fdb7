"""
`create_app(predictor, facts, max_chars, max_sentences)`: the web application of
`allennlp ldnet-serve`, a thin shell over the `ldnet_tagger` predictor.

- `GET /`: the page (`static/`: a text box, the spans highlighted by type with a legend, the tokens
  and tags, the time taken, the model's facts); plain HTML, CSS and JavaScript, nothing fetched
  from elsewhere.
- `POST /predict`: `{"sentence": ...}` or `{"tokens": [...]}` gives what `allennlp predict` gives
  for that line (`{"tokens", "tags", "spans"}`); a list of them gives a list. The
  `Server-Timing` header says how long the server took (`tag;dur=<ms>`).
- `GET /health`: `{"status": "ok"}` while the predictor's worker runs (503 otherwise).
- `GET /model`: the model's facts (`loaded_tagger.model_facts`): its name and its archive's file
  name, never a path on the server's disk.

Input is checked at the edge (`inputs.parse_predict_body`): a bad request gets a 4xx with
`{"detail": "<what to change>"}`. Any other error gets a 500 with a generic sentence; its
traceback goes to the server's log only. Every prediction runs on one worker thread
(`worker.PredictionWorker`), which tags the requests waiting together in one batch.
"""

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, AsyncIterator, Dict, List

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict
from allennlp.predictors import Predictor
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ldnet_allennlp.serving.inputs import BadRequest, max_body_bytes, parse_predict_body
from ldnet_allennlp.serving.worker import PredictionWorker

logger = logging.getLogger(__name__)

INTERNAL_ERROR = (
    "Internal error while answering this request; the server's log has the details. "
    "Please report it with the request that caused it."
)
PAGE_FILES = {"/": "index.html", "/page.js": "page.js", "/page.css": "page.css"}
MEDIA_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


def create_app(
    predictor: Predictor,
    facts: Dict[str, Any],
    max_chars: int = 2000,
    max_sentences: int = 64,
    max_batch: int = 32,
) -> FastAPI:
    """
    The web application: the page, `/predict`, `/model` and `/health`.

    # Parameters

    predictor : `Predictor`
        An `ldnet_tagger` predictor, loaded once; only the worker thread calls it.
    facts : `Dict[str, Any]`
        What `GET /model` answers (`ldnet_allennlp.serving.loaded_tagger.model_facts`).
    max_chars : `int`, optional (default = `2000`)
        The longest text of one input, in characters (tokens count with one space between them).
    max_sentences : `int`, optional (default = `64`)
        The most inputs in one request.
    max_batch : `int`, optional (default = `32`)
        The most sentences the worker tags in one forward pass when requests wait.
    """
    if max_chars < 1 or max_sentences < 1:
        raise ConfigurationError(
            f"max_chars and max_sentences must be >= 1, got {max_chars} and {max_sentences}"
        )
    worker = PredictionWorker(predictor.predict_batch_json, max_batch)
    body_limit = max_body_bytes(max_chars, max_sentences)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        worker.close()

    # no /docs or /openapi.json: FastAPI's docs page loads its scripts from a CDN
    app = FastAPI(
        title="ldnet-serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.worker = worker
    app.state.limits = {"max_chars": max_chars, "max_sentences": max_sentences}
    _add_error_handlers(app)
    app.add_middleware(SecurityHeaders)
    _add_page_routes(app)

    @app.get("/health")
    def health() -> JSONResponse:
        if not worker.alive():
            return JSONResponse({"status": "the prediction worker has stopped"}, status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/model")
    def model() -> JSONResponse:
        return JSONResponse({**facts, "limits": app.state.limits})

    @app.post("/predict")
    async def predict(request: Request) -> Response:
        started = time.perf_counter()
        body = await read_body(request, body_limit)
        inputs, single = parse_predict_body(body, max_chars, max_sentences)
        outputs = await tag(worker, inputs)
        took_ms = (time.perf_counter() - started) * 1000
        return JSONResponse(
            outputs[0] if single else outputs, headers={"Server-Timing": f"tag;dur={took_ms:.1f}"}
        )

    return app


def _add_error_handlers(app: FastAPI) -> None:
    """A `BadRequest` answers its status and sentence; any other error a 500 without traceback."""

    @app.exception_handler(BadRequest)
    async def bad_request(request: Request, error: BadRequest) -> JSONResponse:
        return JSONResponse({"detail": error.message}, status_code=error.status)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, error: Exception) -> JSONResponse:
        # Starlette re-raises the error after this answer, so the server logs its traceback
        return JSONResponse({"detail": INTERNAL_ERROR}, status_code=500)


def _add_page_routes(app: FastAPI) -> None:
    """The page's files in `static/` (`PAGE_FILES`), and an empty `/favicon.ico`."""
    static = resources.files("ldnet_allennlp.serving") / "static"
    pages = {route: (static / name).read_bytes() for route, name in PAGE_FILES.items()}
    for route, name in PAGE_FILES.items():
        media_type = MEDIA_TYPES[name[name.rindex(".") :]] + "; charset=utf-8"

        def page(content: bytes = pages[route], media_type: str = media_type) -> Response:
            return Response(content, media_type=media_type)

        app.add_api_route(route, page, methods=["GET"], include_in_schema=False)

    # no icon: an empty answer rather than a 404 in the log for every page view
    app.add_api_route(
        "/favicon.ico", lambda: Response(status_code=204), methods=["GET"], include_in_schema=False
    )


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` to every answer (a plain ASGI middleware: no per-request task)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Dict) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, refused (413) as soon as it is over `limit` bytes."""
    too_big = BadRequest(
        413,
        f"The request body is over {limit:,} bytes, more than inputs within this server's limits "
        "take (--max-chars, --max-sentences; GET /model shows them): send fewer or shorter "
        "sentences per request.",
    )
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def tag(worker: PredictionWorker, inputs: List[JsonDict]) -> List[JsonDict]:
    """`inputs` tagged by the worker; the predictor's own refusal of an input is a 422."""
    try:
        return await asyncio.wrap_future(worker.submit(inputs))
    except ConfigurationError as error:
        raise BadRequest(422, str(error)) from error
