"""
`allennlp ldnet-serve`: a tagger as a web page and a JSON API. `app.create_app` builds the
application around a loaded predictor; `commands/ldnet_serve.py` is the subcommand. The web
framework (FastAPI, uvicorn) is imported only when a server is made, not with the package.
"""

from ldnet_allennlp.serving.commands import LdnetServe  # noqa: F401
