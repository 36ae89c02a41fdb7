"""
The benchmark figures that the docs pages quote in their prose are the results files' figures:
each quote below is the page's text with the figure put in from its JSON key, so a re-run that
changes a figure fails here until the page says the new one. (BENCHMARKS.md and the charts are
generated, and so need no such list.)
"""

import json
import re
from typing import Any, Callable, Dict

import pytest

from tests.conftest import PROJECT_ROOT

RESULTS = PROJECT_ROOT / "benchmarks" / "results"


def one(value: float) -> str:
    return f"{value:.1f}"


def two(value: float) -> str:
    return f"{value:.2f}"


def whole(value: float) -> str:
    return f"{value:.0f}"


def thousands(value: float) -> str:
    return f"{value / 1000:.1f}"


def loss_as_gain(value: float) -> str:
    return f"{-value:.2f}"


# (page, quote with "{}" where the figure goes, results file, key path, format); a path step
# "rows[run=<name>]" is the row of that run
QUOTES = [
    (
        "scalar_mix.md",
        "The scalar mix scores {} test F1",
        "scalar_mix",
        "conll03_test_f1_scalar_mix",
        two,
    ),
    (
        "scalar_mix.md",
        "{} below LD-Net's features",
        "scalar_mix",
        "test_f1_gap_ldnet_minus_scalar_mix",
        two,
    ),
    ("scalar_mix.md", "| scalar mix | {} |", "scalar_mix", "conll03_test_f1_scalar_mix", two),
    ("scalar_mix.md", "| LD-Net `r_t` | {} |", "scalar_mix", "conll03_test_f1_ldnet", two),
    ("scalar_mix.md", "| no LM | {} |", "scalar_mix", "conll03_test_f1_no_lm", two),
    (
        "scalar_mix.md",
        "`ner_pruned` loses {} for",
        "scalar_mix",
        "conll03_f1_loss_ldnet_pruned",
        two,
    ),
    ("scalar_mix.md", "a loss of {} (", "scalar_mix", "conll03_f1_loss_scalar_mix_pruned", two),
    (
        "distillation.md",
        "scores {} test F1 (mean of 2 seeds)",
        "pruned_students",
        "conll03_test_f1_student",
        two,
    ),
    (
        "distillation.md",
        "and {} for the two teachers' ensemble",
        "pruned_students",
        "conll03_test_f1_teacher",
        two,
    ),
    ("serving_and_export.md", "{} sentences/s at 1 client", "serve", "sentences_per_sec_c1", whole),
    ("serving_and_export.md", "at 1 client (p99 {} ms)", "serve", "p99_ms_c1", one),
    ("serving_and_export.md", "{} at 8 clients", "serve", "sentences_per_sec_c8", whole),
    ("serving_and_export.md", "at 8 clients (p99 {} ms)", "serve", "p99_ms_c8", whole),
    (
        "serving_and_export.md",
        "about one core and {} ms of CPU per sentence",
        "serve",
        "phases.c8.server_cpu_ms_per_request",
        one,
    ),
    ("serving_and_export.md", "tags {}× spaCy", "export", "runtime_vs_spacy_b32", one),
    (
        "serving_and_export.md",
        "(the AllenNLP predictor {}×)",
        "export",
        "allennlp_vs_spacy_b32",
        one,
    ),
    ("serving_and_export.md", "{}× the predictor's", "export", "runtime_speedup_b32", one),
    (
        "serving_and_export.md",
        "{}k words/s at batch 32 (",
        "export",
        "runtime_speed.words_per_sec_runtime_b32",
        thousands,
    ),
    (
        "serving_and_export.md",
        "{}k at batch 1 (",
        "export",
        "runtime_speed.words_per_sec_runtime_b1",
        thousands,
    ),
    (
        "serving_and_export.md",
        "{}× spaCy (",
        "export",
        "runtime_speed.runtime_vs_spacy_b32",
        one,
    ),
    (
        "serving_and_export.md",
        "the LMs from the boundaries' states {}× (",
        "export",
        "runtime_speed.levers.boundary_states.b32",
        two,
    ),
    (
        "serving_and_export.md",
        "the lean graph {}× (",
        "export",
        "runtime_speed.levers.lean_graph.b32",
        two,
    ),
    (
        "serving_and_export.md",
        "In this run: F1 {} (",
        "export",
        "runtime_speed.f1_default_export",
        two,
    ),
    ("serving_and_export.md", "all of them {}×", "export", "runtime_speed.levers.all.b32", two),
    (
        "serving_and_export.md",
        "a loss of {} (at most",
        "export",
        "runtime_speed.f1_default_export_loss",
        lambda value: f"{value:.3f}",
    ),
    (
        "serving_and_export.md",
        "the runtime gives the pruned tagger {}× the un-pruned",
        "export",
        "runtime_pruned_vs_unpruned_b32",
        one,
    ),
    (
        "training.md",
        "perplexity {} on Wikipedia's held-out slice",
        "lm",
        "more_text.runs[run=lm_cpu_more_final].held_out_perplexity.wikipedia",
        one,
    ),
    (
        "training.md",
        "(the shipped LMs: {})",
        "lm",
        "more_text.runs[run=lm_more_text_shipped].held_out_perplexity.wikipedia",
        one,
    ),
    (
        "training.md",
        "is {} on them, against",
        "lm",
        "more_text.ner_probes.lm_cpu_more_final[run=ner_ldnet_glove_sgd_lm-cpu_more_final]"
        ".late_mean_dev_f1",
        two,
    ),
    (
        "training.md",
        "against {} and",
        "lm",
        "more_text.ner_probes.lm_more_text_shipped[run=ner_ldnet_glove_sgd].late_mean_dev_f1",
        two,
    ),
    (
        "training.md",
        "CoNLL-03's own dev text {} (",
        "lm",
        "more_text.runs[run=lm_score_cpu_more_final].held_out_perplexity.conll03_dev",
        one,
    ),
    (
        "training.md",
        "CoNLL-03's own dev text 107.0 ({})",
        "lm",
        "more_text.runs[run=lm_score_shipped].held_out_perplexity.conll03_dev",
        one,
    ),
    (
        "training.md",
        "the last weights score {} forward",
        "lm",
        "more_text.runs[run=lm_cpu_news].curve.-1.held_out_perplexity.conll03_dev",
        one,
    ),
    (
        "training.md",
        "dev F1 over epochs 5 to 8 of {} and",
        "lm",
        "more_text.ner_probes.lm_cpu_news[run=ner_ldnet_glove_sgd_lm-cpu_news_final]"
        ".late_mean_dev_f1",
        two,
    ),
    (
        "training.md",
        "of 92.42 and {} for the two seeds",
        "lm",
        "more_text.ner_probes.lm_cpu_news[run=ner_ldnet_glove_sgd_lm-cpu_news_final_seed2]"
        ".late_mean_dev_f1",
        two,
    ),
    (
        "training.md",
        "| NER, 30 epochs, default seed | {} (",
        "tagging",
        "lm_study.ner_ldnet_glove_sgd_lm-news_final.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "news LMs' NER tagger keeps a dev F1 of {},",
        "pruning_budget",
        "lm_study.ner_lm-news_final.rows[run=ner_budget2_lr0.006_ep10].dev_f1_pruned",
        two,
    ),
    (
        "training.md",
        "| chunking, 20 epochs, default seed | {} (",
        "tagging",
        "lm_study.chunk_ldnet_glove_sgd_lm-news_final.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "| chunking, seed 2 | {} (",
        "tagging",
        "lm_study.chunk_ldnet_glove_sgd_lm-news_final_seed2.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "best dev F1 over 30 epochs is {}",
        "tagging",
        "lm_study.ner_ldnet_glove_sgd_lm-more_text_final.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "chunking's over 20 epochs is {}",
        "tagging",
        "lm_study.chunk_ldnet_glove_sgd_lm-more_text_final.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "is 95.52 and {} for the two seeds",
        "tagging",
        "lm_study.chunk_ldnet_glove_sgd_lm-more_text_final_seed2.best_dev_f1",
        two,
    ),
    (
        "training.md",
        "is 94.10 and {} for the two seeds",
        "tagging",
        "lm_study.ner_ldnet_glove_sgd_lm-more_text_final_seed2.best_dev_f1",
        two,
    ),
    ("pruning.md", "test F1 {} →", "pruning", "conll03_f1_unpruned", two),
    ("pruning.md", "test F1 90.66 → {})", "pruning", "conll03_f1_pruned", two),
    ("pruning.md", "4, {} →", "pruning", "conll00_f1_unpruned", two),
    ("pruning.md", "94.60 → {})", "pruning", "conll00_f1_pruned", two),
    (
        "pruning.md",
        "on chunking (0.0077) it lost {} dev F1",
        "pruning_budget",
        "chunk.rows[run=chunk_budget2_lr0.0077].dev_f1_loss",
        two,
    ),
    (
        "pruning.md",
        "dev F1 instead of {}",
        "pruning_budget",
        "chunk.rows[run=chunk_budget2].dev_f1_loss",
        two,
    ),
    (
        "pruning.md",
        "NER's pruned tagger ended {} dev F1 *above*",
        "pruning_budget",
        "ner.rows[run=ner_budget2_lr0.006_ep10].dev_f1_loss",
        loss_as_gain,
    ),
    (
        "pruning.md",
        "budget 2 still lost {}",
        "pruning_budget",
        "chunk.rows[run=chunk_budget2_lr0.0077_ep10].dev_f1_loss",
        two,
    ),
    (
        "pruning.md",
        "budget 4 lost {}",
        "pruning_budget",
        "chunk.rows[run=chunk_budget4_lr0.0077_ep10].dev_f1_loss",
        two,
    ),
]


def lookup(results: Dict[str, Any], path: str) -> Any:
    """The value at a dotted `path` (a step may hold dashes, as run keys do); a step `rows[run=x]`
    is the (first) row of `rows` whose run is x, a step of a list its index (`-1`: the last)."""
    value: Any = results
    for step in re.findall(r"\w+\[[^\]]*\]|[\w-]+", path):  # dots inside [...] are a run's
        match = re.fullmatch(r"(\w+)\[run=([\w.-]+)\]", step)
        if match:
            value = next(row for row in value[match[1]] if row["run"] == match[2])
        elif isinstance(value, list):
            value = value[int(step)]
        else:
            value = value[step]
    return value


def prose(page: str) -> str:
    """The page's text with every run of white space one space (quotes cross line breaks)."""
    return re.sub(r"\s+", " ", (PROJECT_ROOT / "docs" / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page, quote, results_file, key, form", QUOTES)
def test_the_docs_quote_the_results_figures(
    page: str, quote: str, results_file: str, key: str, form: Callable[[float], str]
):
    results = json.loads((RESULTS / f"{results_file}.json").read_text())
    expected = quote.format(form(lookup(results, key)))
    assert expected in prose(page), f"docs/{page} should say {expected!r} ({results_file}: {key})"
