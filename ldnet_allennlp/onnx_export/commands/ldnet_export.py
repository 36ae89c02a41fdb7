"""
`allennlp ldnet-export model.tar.gz -o DIR [--fp32 | [--int8-tolerance 0.005] [--int8-check-file
F] [--int4-tables]]`: a CRF tagger as an ONNX graph + JSON that `ldnet_runtime` runs without
torch or AllenNLP (`ldnet_allennlp.onnx_export.exporter.export_tagger`). By default the graph's
`MatMul` and `LSTM` weights are quantised to int8, checked against the fp32 graph before
anything is written;
`--fp32` writes the fp32 graph, whose tags are AllenNLP's. `--int4-tables` stores the word
tables at 4 bits instead of 8 (a smaller folder, `format_version` 2 or newer).
"""

import argparse
from typing import List

from allennlp.commands.subcommand import Subcommand

from ldnet_allennlp.onnx_export.exporter import INT8_TOLERANCE


@Subcommand.register("ldnet-export")
class LdnetExport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Export a CRF tagger (e.g. a pruned LD-Net tagger) as an ONNX graph plus its "
            "vocabularies, tag set and CRF as JSON, for ldnet_runtime: tagging with numpy and "
            "onnxruntime, without torch or AllenNLP, with the same tags."
        )
        subparser = parser.add_parser(self.name, description=description, help=description)
        subparser.add_argument(
            "archive_file",
            type=str,
            help="the tagger's model.tar.gz, or pretrained:<name> for a shipped one",
        )
        subparser.add_argument(
            "-o",
            "--output-dir",
            type=str,
            required=True,
            help="the folder to write (new, or empty)",
        )
        precision = subparser.add_mutually_exclusive_group()
        precision.add_argument(
            "--int8",
            action="store_true",
            help="(the default) quantise the graph's MatMul and LSTM weights to int8 "
            "(onnxruntime's quantize_dynamic); refused, writing nothing, when its tags differ "
            "from the fp32 graph's on the check set by more than --int8-tolerance",
        )
        precision.add_argument(
            "--fp32",
            action="store_true",
            help="write the fp32 graph: the same tags as AllenNLP's, sentence for sentence "
            "(int8 changes a few tags)",
        )
        subparser.add_argument(
            "--no-word-tables",
            action="store_true",
            help="keep what depends on the word alone (embedding rows, the LMs' input "
            "embeddings, the character CNN) in the graph, instead of looking it up in tables "
            "computed for every word of the vocabularies",
        )
        subparser.add_argument(
            "--int4-tables",
            action="store_true",
            help="with the int8 export: store every word table at 4 bits (one scale per row, "
            "two values a byte) instead of 8, a smaller folder of format_version 2 or newer (on "
            "CoNLL-03 dev, F1 within 0.1 of the fp32 export's); not with --fp32 or "
            "--no-word-tables",
        )
        subparser.add_argument(
            "--lm-boundary-positions",
            action="store_true",
            help="put the LMs' sentence boundaries in their input, two positions around each "
            "sentence (as the shipped ner_pruned runtime export has them), instead of starting "
            "the LMs from the states that reading the boundaries leaves (the default: two LSTM "
            "steps fewer per LM layer)",
        )
        subparser.add_argument(
            "--int8-tolerance",
            type=float,
            default=INT8_TOLERANCE,
            help="with --int8: the largest share of the check set's tokens whose tag may differ "
            f"from the fp32 graph's (default {INT8_TOLERANCE}: on the default check set, 41 "
            "tokens, none may)",
        )
        subparser.add_argument(
            "--int8-check-file",
            default=None,
            help="with --int8: the check set, a CoNLL file (one token per line, its first "
            "column; a blank line between sentences; -DOCSTART- lines skipped), e.g. CoNLL-03 "
            "eng.testa (default: the fp32 check's 5 sentences)",
        )
        subparser.set_defaults(func=export_from_args)
        return subparser


def export_from_args(args: argparse.Namespace) -> None:
    from ldnet_allennlp.onnx_export.exporter import export_tagger

    int8 = not getattr(args, "fp32", False)
    check_file = getattr(args, "int8_check_file", None)
    report = export_tagger(
        args.archive_file,
        args.output_dir,
        int8=int8,
        int8_tolerance=getattr(args, "int8_tolerance", INT8_TOLERANCE),
        int8_check_sentences=read_conll_tokens(check_file) if check_file else None,
        word_tables=not getattr(args, "no_word_tables", False),
        int4_tables=getattr(args, "int4_tables", False),
        lm_boundary_positions=getattr(args, "lm_boundary_positions", False),
    )
    inputs = ", ".join(f"{name} ({kind})" for name, kind in report.inputs.items())
    print(f"inputs: {inputs}; {report.num_tags} tags")
    print(
        f"checked against AllenNLP on {report.check_sentences} sentences: same tags, emissions "
        f"within {report.max_abs_logit_difference:.2g}"
    )
    if report.int8 is not None:
        check = report.int8["check"]
        print(
            f"int8 ({', '.join(report.int8['op_types'])} weights): against the fp32 graph on "
            f"{check['sentences']} sentences, tag agreement {check['tag_agreement']:.4%} "
            f"({check['tokens_with_other_tags']} of {check['tokens']} tokens differ; tolerance "
            f"{check['tolerance']:.4%}), emissions within {check['max_abs_logit_difference']:.2g}"
        )
    print(
        f"wrote {report.output_dir} ({report.total_bytes / 1e6:.1f} MB, graph "
        f"{report.graph_bytes / 1e6:.1f} MB) in {report.seconds:.1f} s"
    )
    print(
        'tag with: python -c "from ldnet_runtime import Tagger; '
        f"print(Tagger('{report.output_dir}').tag('Helmut Kohl met Jacques Chirac in Bonn.'))\""
    )


def read_conll_tokens(path: str) -> List[List[str]]:
    """
    The sentences of a CoNLL file as token lists: each line's first column is a token, a blank
    line ends a sentence, and `-DOCSTART-` lines are skipped.

    # Parameters

    path : `str`
        The file.

    # Returns

    The non-empty sentences, in the file's order.
    """
    sentences: List[List[str]] = []
    sentence: List[str] = []
    with open(path, encoding="utf-8") as conll_file:
        for line in conll_file:
            fields = line.split()
            if fields and fields[0] == "-DOCSTART-":
                continue
            if fields:
                sentence.append(fields[0])
            elif sentence:
                sentences.append(sentence)
                sentence = []
    if sentence:
        sentences.append(sentence)
    return sentences
