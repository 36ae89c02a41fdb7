"""
`allennlp ldnet-serve [ARCHIVE | --full] [--host 127.0.0.1] [--port 8000] [--verbose]`: serves a
tagger (a name from `pretrained/MANIFEST.json`, by default the pruned `ner_pruned`, `--full` for
the un-pruned `ner`, or a tagger archive's path) as a web page and a JSON API
(`ldnet_allennlp.serving.app`), with uvicorn, until Ctrl+C. AllenNLP's INFO log only with
`--verbose` (`ldnet_allennlp/patches/command_line_logging.py`); uvicorn's own log (start,
stop, one line per request unless `--no-access-log`) stays.
"""

import argparse
import logging

from allennlp.commands.subcommand import Subcommand

from ldnet_runtime.tagging import DEFAULT_MODEL, FULL_MODEL, chosen_model

logger = logging.getLogger(__name__)

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@Subcommand.register("ldnet-serve")
class LdnetServe(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Serve a tagger as a web page and a JSON API (POST /predict, GET /model, "
            "GET /health): the model is loaded once, bound to 127.0.0.1 unless --host says "
            "otherwise."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "archive",
            nargs="?",
            default=None,
            help="a name from pretrained/MANIFEST.json (default: ner_pruned, the shipped pruned "
            "NER tagger; ner: the un-pruned one, 2.4x slower to serve) or a tagger archive's path",
        )
        subparser.add_argument(
            "--full",
            action="store_true",
            help=f"serve the un-pruned shipped tagger ({FULL_MODEL}) instead of {DEFAULT_MODEL}",
        )
        subparser.add_argument(
            "--verbose", action="store_true", help="show AllenNLP's INFO log on stderr as well"
        )
        subparser.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (127.0.0.1: this machine only; the API has no "
            "authentication)",
        )
        subparser.add_argument("--port", type=int, default=8000, help="port to listen on")
        subparser.add_argument(
            "--max-chars",
            type=int,
            default=2000,
            help="the longest text one input may have, in characters",
        )
        subparser.add_argument(
            "--max-sentences",
            type=int,
            default=64,
            help="the most inputs one request may hold",
        )
        subparser.add_argument(
            "--max-batch",
            type=int,
            default=32,
            help="the most sentences tagged in one forward pass when requests wait",
        )
        subparser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="torch's intra-op threads (unset: torch's own choice)",
        )
        subparser.add_argument(
            "--no-access-log", action="store_true", help="do not log every request"
        )
        subparser.set_defaults(func=serve_from_args)
        return subparser


def serve_from_args(args: argparse.Namespace) -> None:
    import torch
    import uvicorn
    from allennlp.common.util import SigTermReceived

    from ldnet_allennlp.serving.app import create_app
    from ldnet_allennlp.serving.loaded_tagger import load_tagger

    if args.threads:
        torch.set_num_threads(args.threads)
    model = model_of(args)
    predictor, facts = load_tagger(model)
    # the first forward pass is several times slower than the next ones: not a user's request
    predictor.predict_json({"sentence": "Warm-up sentence from Bonn."})
    app = create_app(predictor, facts, args.max_chars, args.max_sentences, args.max_batch)
    if args.host not in LOOPBACK:
        logger.warning(
            "Listening on %s: anyone who can reach this address can use the tagger (the API has "
            "no authentication).",
            args.host,
        )
    print(
        f"Serving {facts['name'] or model} at http://{args.host}:{args.port}/ (Ctrl+C stops)",
        flush=True,
    )
    try:
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            log_level="info",
            access_log=not args.no_access_log,
            workers=1,
        )
    except (KeyboardInterrupt, SigTermReceived):
        # uvicorn has shut down cleanly, then re-raised the signal it caught (AllenNLP's SIGTERM
        # handler turns it into SigTermReceived): nothing left to do
        print("ldnet-serve stopped", flush=True)


def model_of(args: argparse.Namespace) -> str:
    """
    What `args` asks to serve: `archive`, or the default shipped tagger (`--full`: the un-pruned
    one), by `ldnet-tag`'s rule (`chosen_model`).

    # Parameters

    args : `argparse.Namespace`
        `archive` (or `None`); `full` optional.

    # Returns

    A shipped tagger's name or an archive's path.
    """
    from allennlp.common.checks import ConfigurationError

    try:
        return chosen_model(args.archive, getattr(args, "full", False), given_as="an archive")
    except ValueError as error:
        raise ConfigurationError(f"{error}.") from error
