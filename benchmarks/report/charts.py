"""
The report's charts, drawn with matplotlib (Agg) from the results files and
`pretrained/MANIFEST.json` (no figure is typed in here); a function reads each chart's points out
of the JSON, another draws them. The same JSON gives the same PNG bytes (fixed size and dpi, no
software name or date in the metadata).

- `speed_accuracy.png`: CoNLL-03 test F1 against words/s on one thread of the shipped NER taggers
  and spaCy's `en_core_web_sm` (`export.json`, batch 1 and 32), and apart from them the
  published figures of other taggers (`published_anchors.json`);
- `f1_vs_layers.png`: test F1 against the LM layers left by pruning (`pruning_budget.json`);
- `layer_masks.png`: the live LM layers at each epoch of the shipped pruning runs (`pruning.json`);
- `lm_more_text.png`: dev F1 by epoch of the final recipes on the LMs continued on more text
  against the shipped LMs (`tagging.json`), with the LMs' held-out perplexities, the LMs'
  perplexity on CoNLL-03's dev text against the tokens a continuation has seen (`lm.json`), and
  each LM set's best dev F1 gain against that perplexity.
"""

import textwrap
from collections import namedtuple
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy  # noqa: E402

from benchmarks.harness.data import LM_DIRECTIONS as DIRECTIONS  # noqa: E402
from benchmarks.harness.data import ROOT  # noqa: E402
from benchmarks.harness.results import load_results  # noqa: E402
from benchmarks.studies.tagging_results import (  # noqa: E402
    FINAL_RECIPES,
    LM_LABEL_INFIX,
    SEED_SUFFIX,
)

MANIFEST = ROOT / "pretrained" / "MANIFEST.json"

# The systems in export.json: (label, words/s key without its "_b1"/"_b32" end, the key naming
# the archive timed, whose F1 the manifest has; None: no F1 measured here); a series is drawn
# when export.json has its keys. These are the `measure` stage's exports (fp32: AllenNLP's tags).
SPEED_SERIES = (
    ("ner, ldnet_runtime, fp32", "words_per_sec_runtime_unpruned", "unpruned_archive"),
    ("ner_pruned, ldnet_runtime, fp32", "words_per_sec_runtime", "archive"),
    ("ner_pruned, AllenNLP predictor", "words_per_sec_allennlp", "archive"),
    ("spaCy en_core_web_sm", "words_per_sec_spacy_sm", None),
)
# the default export (int8, word tables) of the `speed` stage, with its own eng.testb F1
DEFAULT_EXPORT_SERIES = ("ner_pruned, ldnet_runtime, default export (int8)", "runtime_speed")
# pruning.json keys each task's figures under this prefix
PRUNING_PREFIXES = (("ner", ""), ("chunk", "conll00_"))
LIVE, PRUNED, UNKNOWN = 1.0, 0.0, 0.5  # a cell of the layer-mask map
# the LMs continued on more text: their `--lm-label` in tagging.json's `lm_study` -> what they
# were continued on and the run of lm.json's `more_text.runs` that scored their weights on
# CoNLL-03's dev text (a continuation's last curve point is its last weights); the shipped LMs'
# run; and the runs whose held-out perplexities the caption gives (continued, shipped)
CONTINUED_LMS = {
    "more_text_final": ("Wikipedia + Wikinews", "lm_score_cpu_more_final"),
    "news_final": ("Wikinews", "lm_cpu_news"),
}
SHIPPED_LM_RUN = "lm_score_shipped"
MORE_TEXT_RUNS = ("lm_score_cpu_more_final", SHIPPED_LM_RUN)
RECIPES = tuple(FINAL_RECIPES.items())  # (task, its final recipe)
CONLL_HELD_OUT = "conll03_dev"  # the held-out set of CoNLL-03's dev text (eng.testa)


# one system timed here: words/s on one thread at batch 1 and 32, its CoNLL-03 test F1 (None
# when not measured here)
SpeedPoint = namedtuple("SpeedPoint", "label words_per_sec_b1 words_per_sec_b32 f1")
# a published figure: CoNLL-03 test F1, words/s when the source gives one, the hardware
Anchor = namedtuple("Anchor", "name f1 words_per_sec hardware")
# a phase-2 run of the budget study: LM layers kept (both directions), test F1, epochs, whether
# it is the run chosen on dev
BudgetPoint = namedtuple("BudgetPoint", "run live_layers test_f1 epochs chosen")
Json = Mapping[str, Any]  # a results file
# a training run's dev F1 after each epoch, and the `--lm-label` of its LMs (None: the shipped)
DevCurve = namedtuple("DevCurve", "run dev_f1_by_epoch lms")
# a task's best dev F1 on an LM set (the mean over its seeds, and their number) minus the
# shipped LMs' (the same mean), against the forward LM's perplexity on CoNLL-03's dev text
GainPoint = namedtuple("GainPoint", "task lms perplexity gain seeds")
# an LM's perplexity on CoNLL-03's dev text: a continuation's at each evaluation (millions of
# tokens seen), or one level for a run of no passes (`tokens` None)
PerplexityCurve = namedtuple("PerplexityCurve", "run direction tokens perplexities")
# a shipped pruning run: its title, `mask_states`, and the live layers after each epoch
PruningRun = Tuple[str, Dict[str, numpy.ndarray], List[float]]


def measured_speed_points(export: Json, manifest: Json) -> List[SpeedPoint]:
    """The systems timed by the export study (`export.json`): the default export of the speed
    stage (`DEFAULT_EXPORT_SERIES`, with its F1), then `SPEED_SERIES` in order, each with the
    `test_f1` of the first manifest entry whose `file` is its archive's name (else None)."""
    entries = [e for e in manifest.values() if isinstance(e, dict)]
    points = []
    label, section = DEFAULT_EXPORT_SERIES
    speed = export.get(section, {})
    if {"words_per_sec_runtime_b1", "words_per_sec_runtime_b32"} <= speed.keys():
        rates = speed["words_per_sec_runtime_b1"], speed["words_per_sec_runtime_b32"]
        points.append(SpeedPoint(label, *rates, speed.get("f1_default_export")))
    for label, key, archive_key in SPEED_SERIES:
        b1, b32 = export.get(f"{key}_b1"), export.get(f"{key}_b32")
        if b1 is None or b32 is None or (archive_key and archive_key not in export):
            continue
        name = Path(export[archive_key]).name if archive_key else None
        f1 = next((e.get("test_f1") for e in entries if name and e.get("file") == name), None)
        points.append(SpeedPoint(label, b1, b32, f1))
    return points


def anchor_points(anchors: Json) -> List[Anchor]:
    """The published anchors of `published_anchors.json`, in its order."""
    return [
        Anchor(a["name"], a["conll03_test_f1"], a.get("words_per_sec"), a["hardware"])
        for a in anchors.get("anchors", [])
    ]


def budget_points(budget: Json, task: str) -> List[BudgetPoint]:
    """The runs of `pruning_budget.json` for `task` ("ner" or "chunk"), sorted by live layers
    (kept by the pruned tagger, forward plus backward), then epochs."""
    study, points = budget.get(task, {}), []
    for row in study.get("rows", []):
        live = len(row["kept_layers_forward"]) + len(row["kept_layers_backward"])
        chosen = row["run"] == study.get("chosen_run_on_dev")
        points.append(BudgetPoint(row["run"], live, row["test_f1_pruned"], row["epochs"], chosen))
    return sorted(points, key=lambda p: (p.live_layers, p.epochs, p.run))


def mask_states(
    live_layers_by_epoch: Sequence[float], kept: Mapping[str, Sequence[int]], num_layers: int
) -> Dict[str, numpy.ndarray]:
    """Per direction, `(num_layers, num_epochs)`: `LIVE`, `PRUNED` or `UNKNOWN` for each layer
    at each epoch of a run whose masks stay at 0 (`sticky_zeros`): a layer `kept` was live at every
    epoch; at an epoch with more live layers than kept, some others were (which is not recorded)."""
    num_kept = sum(len(kept[direction]) for direction in DIRECTIONS)
    for epoch, live in enumerate(live_layers_by_epoch):
        if live < num_kept:
            raise ValueError(f"epoch {epoch}: {live} live layers, fewer than {num_kept} kept")
    epochs = [UNKNOWN if live > num_kept else PRUNED for live in live_layers_by_epoch]
    states = {direction: numpy.tile(epochs, (num_layers, 1)) for direction in DIRECTIONS}
    for direction in DIRECTIONS:
        states[direction][list(kept[direction]), :] = LIVE
    return states


def pruning_runs(pruning: Json, manifest: Json) -> List[PruningRun]:
    """The shipped pruning runs of `pruning.json` (NER, then chunking), each over the layers of
    the task's un-pruned tagger in the manifest."""
    runs = []
    for task, prefix in PRUNING_PREFIXES:
        live = pruning.get(f"{prefix}live_layers_by_epoch")
        if live is None or task not in manifest:
            continue
        kept = {d: pruning[f"{prefix}kept_layers_{d}"] for d in DIRECTIONS}
        num_layers = len(manifest[task]["kept_layers"]["forward"])
        title = pruning.get(f"{prefix}title", task).replace("LD-Net pruning: ", "")
        runs.append((title, mask_states(live, kept, num_layers), list(live)))
    return runs


def more_text_curves(tagging: Json, task_run: str) -> List[DevCurve]:
    """The dev F1 curves of the recipe `task_run` in tagging.json: on the shipped LMs (its runs
    in `recipe_search`, one per seed) and on each set of continued LMs (its `lm_study` runs
    labelled as in `CONTINUED_LMS`), in that order, each sorted by run."""
    curves = []
    for section in ("recipe_search", "lm_study"):
        for run, record in sorted(tagging.get(section, {}).items()):
            recipe, _, label = run.split(SEED_SUFFIX)[0].partition(LM_LABEL_INFIX)
            lms = label or None
            if recipe == task_run and (lms in CONTINUED_LMS if section == "lm_study" else not lms):
                curves.append(DevCurve(run, list(record["dev_f1_by_epoch"]), lms))
    return curves


def forward_conll_perplexity(curves: Sequence[PerplexityCurve], run: str) -> Any:
    """The forward LM's perplexity on CoNLL-03's dev text of lm.json's `run`: its level, or a
    continuation's last point (its last weights); None where it has none."""
    found = [c.perplexities[-1] for c in curves if c.run == run and c.direction == "forward"]
    return found[0] if found else None


def f1_gain_points(tagging: Json, curves: Sequence[PerplexityCurve]) -> List[GainPoint]:
    """Per task of `RECIPES` and LM set (the shipped LMs, each of `CONTINUED_LMS` with runs):
    the best dev F1 (mean over the seeds) minus the shipped LMs', against the forward LM's
    CoNLL-03 dev perplexity (`conll_perplexity_curves`); sets without one are left out."""
    points = []
    for task, run in RECIPES:
        best: Dict[Any, List[float]] = {}
        for curve in more_text_curves(tagging, run):
            best.setdefault(curve.lms, []).append(max(curve.dev_f1_by_epoch))
        if None not in best:
            continue
        shipped = sum(best[None]) / len(best[None])
        for lms, values in best.items():
            lm_run = SHIPPED_LM_RUN if lms is None else CONTINUED_LMS[lms][1]
            perplexity = forward_conll_perplexity(curves, lm_run)
            if perplexity is not None:
                gain = round(sum(values) / len(values) - shipped, 4)
                points.append(GainPoint(task, lms, perplexity, gain, len(values)))
    return points


def draw_f1_gains(axes: plt.Axes, points: Sequence[GainPoint]) -> None:
    """Each task's gain in best dev F1 (one marker a task) against perplexity, each LM set in
    its colour of the other panels (the shipped LMs grey), its seeds in brackets."""
    markers = dict(zip(sorted({point.task for point in points}), "os^v"))
    colours: Dict[Any, Any] = dict(zip(CONTINUED_LMS, plt.get_cmap("tab10").colors))
    colours[None] = "grey"
    for point in points:
        name = "shipped LMs" if point.lms is None else CONTINUED_LMS[point.lms][0]
        label = f"{point.task}, {name} ({point.seeds} seed{'s' * (point.seeds > 1)})"
        style = dict(marker=markers[point.task], color=colours[point.lms], ms=8, ls="")
        axes.plot([point.perplexity], [point.gain], label=label, **style)
    axes.axhline(0.0, color="grey", lw=1)
    axes.set_title("Best dev F1 gained against the LMs' perplexity", fontsize=10)
    axes.set(xlabel=f"forward LM perplexity on CoNLL-03 dev text ({CONLL_HELD_OUT})")
    axes.set(ylabel="best dev F1 less the shipped LMs' (means of seeds)")
    low, high = axes.get_ylim()
    axes.set_ylim(low - 0.6 * (high - low), high)  # room below the points for the legend
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="lower left")


def more_text_caption(lm: Json) -> str:
    """The held-out perplexities (forward LM) of `MORE_TEXT_RUNS` in lm.json, and on the old
    corpus's dev split (their `best_dev_perplexity`: a run of no passes scores its weights
    once), or "" without them."""
    found = lm.get("more_text", {}).get("runs", [])
    runs = {run["run"]: run for run in found if run["direction"] == "forward"}
    if not all(name in runs for name in MORE_TEXT_RUNS):
        return ""
    ours, shipped = (runs[name]["held_out_perplexity"] for name in MORE_TEXT_RUNS)
    pairs = [f"{name} {ours[name]:.1f} ({shipped[name]:.1f})" for name in sorted(ours)]
    old = (runs[name]["best_dev_perplexity"] for name in MORE_TEXT_RUNS)
    pairs.append("the old corpus's dev split {:.1f} ({:.1f})".format(*old))
    return f"Forward LM perplexity, continued (shipped): {', '.join(pairs)}. (lm.json, more_text)"


def conll_perplexity_curves(lm: Json) -> List[PerplexityCurve]:
    """The runs of lm.json's `more_text` that scored CoNLL-03's dev text (`CONLL_HELD_OUT`): a
    run that trained with `--curve-held-out`, the points of its curve that have it; a run of no
    passes, its one score (a level). In lm.json's order."""
    curves = []
    for run in lm.get("more_text", {}).get("runs", []):
        points = [
            (point["tokens_seen"] / 1e6, point["held_out_perplexity"][CONLL_HELD_OUT])
            for point in run.get("curve", [])
            if CONLL_HELD_OUT in point.get("held_out_perplexity", {})
        ]
        if run.get("tokens_seen") and points:
            tokens, perplexities = (list(values) for values in zip(*points))
            curves.append(PerplexityCurve(run["run"], run["direction"], tokens, perplexities))
        elif not run.get("tokens_seen") and CONLL_HELD_OUT in run.get("held_out_perplexity", {}):
            level = [run["held_out_perplexity"][CONLL_HELD_OUT]]
            curves.append(PerplexityCurve(run["run"], run["direction"], None, level))
    return curves


def draw_conll_perplexity(axes: plt.Axes, curves: Sequence[PerplexityCurve]) -> None:
    """Each continuation's curve (forward solid, backward dashed), each level a grey line; an
    LM set of `CONTINUED_LMS` in its colour of the dev F1 panels, other runs in the next ones."""
    palette = plt.get_cmap("tab10").colors
    colour_of = {run: palette[i] for i, (_, run) in enumerate(CONTINUED_LMS.values())}
    colours = iter(palette[len(CONTINUED_LMS) :])
    shade_of: Dict[str, str] = {}
    for curve in curves:
        style = "-" if curve.direction == "forward" else "--"
        label = f"{curve.run} ({curve.direction})"
        if curve.tokens is None:
            shade = shade_of.setdefault(curve.run, str(0.25 + 0.3 * (len(shade_of) % 2)))
            axes.axhline(curve.perplexities[0], color=shade, ls=style, lw=1, label=label)
            continue
        colour = colour_of.get(curve.run) or colour_of.setdefault(curve.run, next(colours))
        axes.plot(curve.tokens, curve.perplexities, style, marker=".", color=colour, label=label)
    axes.set_title(f"LM perplexity on CoNLL-03 dev text ({CONLL_HELD_OUT})", fontsize=10)
    axes.set(xlabel="tokens seen by the continuation (millions)", ylabel="perplexity")
    low, high = axes.get_ylim()
    axes.set_ylim(low - 0.5 * (high - low), high)  # room below the curves for the legend
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=6, loc="lower left")


def save(figure: plt.Figure, path: Path, title: str, bottom: float = 0.0, **title_style) -> Path:
    """Titles `figure` and lays it out (`bottom` of its height left for a caption or a legend),
    writes it to `path` as a PNG with no software name or date, and closes it."""
    figure.suptitle(title, **title_style)
    figure.tight_layout(rect=(0, bottom, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(figure)
    return path


def draw_measured(axes: plt.Axes, points: Sequence[SpeedPoint]) -> List[str]:
    """Draws our taggers (batch 1 open, batch 32 filled, joined) and, for a system with no F1,
    grey lines at its words/s; returns the systems drawn without an F1."""
    colours = plt.get_cmap("tab10").colors
    no_f1 = []
    for index, point in enumerate(points):
        if point.f1 is None:
            no_f1.append(point.label)
            label = f"{point.label} (here, no F1)"
            for speed, style in ((point.words_per_sec_b1, ":"), (point.words_per_sec_b32, "--")):
                axes.axvline(speed, color="grey", linestyle=style, linewidth=1.2, label=label)
                label = None
            continue
        colour = colours[index % len(colours)]
        speeds = (point.words_per_sec_b1, point.words_per_sec_b32)
        axes.plot(speeds, (point.f1, point.f1), "-", color=colour, linewidth=1.5)
        axes.plot(speeds[0], point.f1, "o", mfc="white", mec=colour, mew=1.5, ms=7)
        axes.plot(speeds[1], point.f1, "o", color=colour, ms=7, label=f"{point.label} (here)")
    return no_f1


def draw_anchors(axes: plt.Axes, side: plt.Axes, anchors: Sequence[Anchor]) -> None:
    """Draws published anchors: with a speed as grey diamonds on `axes`, F1-only ones as ticks
    on the narrow `side` axes."""
    label = "published, other hardware"
    for anchor in anchors:
        if anchor.words_per_sec is None:
            side.plot([0, 0.2], [anchor.f1] * 2, color="dimgrey", linewidth=2)
            name = f"{anchor.name}: {anchor.f1:g}"
            side.annotate(name, (0.25, anchor.f1), va="center", fontsize=7)
            continue
        axes.plot(anchor.words_per_sec, anchor.f1, "D", color="dimgrey", ms=6, label=label)
        label = None
        left = anchor.words_per_sec > 100_000  # near the right edge: the text goes left
        text = textwrap.fill(f"{anchor.name}: {anchor.f1:g} F1; hardware: {anchor.hardware}", 34)
        style = dict(fontsize=7, color="dimgrey", va="top", ha="right" if left else "left")
        offset = dict(xytext=(-6 if left else 6, -5), textcoords="offset points")
        axes.annotate(text, (anchor.words_per_sec, anchor.f1), **offset, **style)


def speed_accuracy_chart(points: List[SpeedPoint], anchors: List[Anchor], path: Path) -> Path:
    """Draws `speed_accuracy.png`: F1 against words/s (log), measured and published apart."""
    figure, (axes, side) = plt.subplots(
        1, 2, figsize=(11, 5.6), sharey=True, gridspec_kw={"width_ratios": [4, 1.7]}
    )
    no_f1 = draw_measured(axes, points)
    draw_anchors(axes, side, anchors)
    # the F1 axis: every F1 drawn, with room for the labels below the points
    f1s = [p.f1 for p in points if p.f1 is not None] + [a.f1 for a in anchors]
    axes.set(xscale="log", xlim=(300, 1_000_000), ylim=(min(f1s) - 0.8, max(f1s) + 0.4))
    axes.set_xlabel("words/s (log scale); here: one thread, batch 1 (open) and 32 (filled)")
    axes.set_ylabel("CoNLL-03 test F1 (eng.testb)")
    axes.grid(True, which="both", alpha=0.3)
    handles, labels = axes.get_legend_handles_labels()
    side.legend(handles, labels, loc="lower left", fontsize=7, borderaxespad=0.2)
    side.set(xlim=(0, 1.5), xticks=[])
    side.set_title("published F1,\nno speed given", fontsize=8)
    caption = "Measured here: benchmarks/results/export.json (F1: pretrained/MANIFEST.json)."
    if no_f1:
        caption += f" No CoNLL-03 F1 measured here for {', '.join(no_f1)}: grey lines at its"
        caption += " words/s (dotted: batch 1, dashed: batch 32)."
    caption += "\nPublished: benchmarks/results/published_anchors.json (sources, what was timed)."
    figure.text(0.01, 0.01, caption, fontsize=7, va="bottom")
    return save(figure, path, "Speed and accuracy: CoNLL-03 NER", bottom=0.06)


def f1_vs_layers_chart(budget: Json, tasks: Sequence[str], path: Path) -> Path:
    """Draws `f1_vs_layers.png`: test F1 against live LM layers, one panel per task."""
    figure, panels = plt.subplots(1, max(len(tasks), 1), figsize=(10, 4.4), squeeze=False)
    for axes, task in zip(panels[0], tasks):
        points = budget_points(budget, task)
        for epochs, marker in ((3, "s"), (10, "o")):
            chosen = [p for p in points if p.epochs == epochs]
            x, y = [p.live_layers for p in chosen], [p.test_f1 for p in chosen]
            axes.plot(x, y, marker, ms=7, alpha=0.8, label=f"phase 2, {epochs} epochs")
        star = dict(color="black", ms=14, label="chosen on dev (shipped)")
        for point in (p for p in points if p.chosen):
            axes.plot(point.live_layers, point.test_f1, "*", **star)
        unpruned = dict(color="grey", linestyle="--", label="phase-1 tagger, all layers")
        axes.axhline(budget[task]["test_f1_unpruned"], **unpruned)
        axes.set_title(budget[task].get("title", task), fontsize=10)
        axes.set(xlabel="live LM layers (forward + backward)", ylabel="test F1")
        axes.set_xticks(sorted({p.live_layers for p in points}))
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7, loc="lower right")
    title = "F1 against the LM layers left by pruning (benchmarks/results/pruning_budget.json)"
    return save(figure, path, title)


def layer_masks_chart(runs: Sequence[PruningRun], path: Path) -> Path:
    """Draws `layer_masks.png`: a layer x epoch map per run and direction."""
    colours = matplotlib.colors.ListedColormap(["#f0f0f0", "#9ecae1", "#08519c"])
    figure, panels = plt.subplots(
        max(len(runs), 1), 2, figsize=(10, 2.6 * max(len(runs), 1) + 0.8), squeeze=False
    )
    for row, (title, states, live) in zip(panels, runs):
        for axes, direction in zip(row, DIRECTIONS):
            grid = states[direction]
            axes.imshow(grid, cmap=colours, vmin=0, vmax=1, aspect="auto", origin="lower")
            axes.set_title(f"{title}: {direction} LM", fontsize=9)
            axes.set(yticks=range(grid.shape[0]), ylabel="LM layer", xticks=range(grid.shape[1]))
            axes.set_xticklabels([f"{e}\n({live[e]:g})" for e in range(grid.shape[1])], fontsize=7)
            axes.set_xlabel("epoch (live layers, both directions)", fontsize=8)
    legend = [(LIVE, "live (kept)"), (UNKNOWN, "one of these was also live")]
    legend.append((PRUNED, "pruned (mask 0)"))
    handles = [matplotlib.patches.Patch(color=colours(v), label=label) for v, label in legend]
    figure.legend(handles=handles, loc="lower center", ncol=3, fontsize=8)
    title = (
        "LM layers live (mask > 0) over the shipped pruning runs (benchmarks/results/pruning.json:"
        "\nlive-layer counts per epoch and the layers kept; masks that reach 0 stay at 0)"
    )
    return save(figure, path, title, bottom=0.06, fontsize=10)


def more_text_chart(
    tagging: Json, caption: str, path: Path, perplexity: Sequence[PerplexityCurve] = ()
) -> Path:
    """Draws `lm_more_text.png`: dev F1 by epoch, one panel per task, the shipped LMs' runs in
    grey, each set of continued LMs' in a colour of its own (seed 2 dashed); with `perplexity`,
    a panel of the LMs' perplexity on CoNLL-03's dev text against tokens seen, and one of the
    best dev F1 gained against that perplexity (`f1_gain_points`)."""
    gains = f1_gain_points(tagging, perplexity)
    count = len(RECIPES) + bool(perplexity) + bool(gains)
    rows = 2 if count == 4 else 1
    columns = count // rows
    figure, grid = plt.subplots(rows, columns, figsize=(6 * columns, 4.6 * rows), squeeze=False)
    panels = list(grid.flat)
    if perplexity:
        draw_conll_perplexity(panels[len(RECIPES)], perplexity)
    if gains:
        draw_f1_gains(panels[-1], gains)
    colours = dict(zip(CONTINUED_LMS, plt.get_cmap("tab10").colors))
    for axes, (task, run) in zip(panels, RECIPES):
        for curve in more_text_curves(tagging, run):
            epochs = range(1, len(curve.dev_f1_by_epoch) + 1)
            seed = curve.run.partition(SEED_SUFFIX)[2]
            style: Dict[str, Any] = dict(color="grey", lw=1, alpha=0.8)
            label = "shipped LMs"
            if curve.lms is not None:
                style = dict(color=colours[curve.lms], lw=1.5, ls="--" if seed else "-")
                label = CONTINUED_LMS[curve.lms][0]
            label += f", seed {seed}" if seed else ", default seed"
            axes.plot(epochs, curve.dev_f1_by_epoch, marker=".", label=label, **style)
        axes.set_title(f"{task}: {run}", fontsize=10)
        axes.set(xlabel="epoch", ylabel="dev F1")
        axes.set_ylim(bottom=91.0 if task == "ner" else 93.0)
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7, loc="lower right")
    figure.text(0.01, 0.01, textwrap.fill(caption, 75 * columns), fontsize=7, va="bottom")
    title = "The LMs continued on more text (benchmarks/results/tagging.json, lm.json)"
    return save(figure, path, title, bottom=0.08 / rows)


def render_charts(results_dir: Path, out_dir: Path, manifest_path=MANIFEST) -> Dict[str, Path]:
    """Draws each chart whose results (under `results_dir`) are there into `out_dir`, with the
    taggers' test F1 from the manifest; returns chart name -> PNG path."""
    export, published, budget, pruning, tagging, lm = (
        load_results(name, Path(results_dir))
        for name in ("export", "published_anchors", "pruning_budget", "pruning", "tagging", "lm")
    )
    manifest = load_results(Path(manifest_path))
    points, anchors = measured_speed_points(export, manifest), anchor_points(published)
    runs = pruning_runs(pruning, manifest)
    tasks = [task for task in ("ner", "chunk") if budget.get(task, {}).get("rows")]
    out_dir, drawn = Path(out_dir), {}
    if points:
        drawn["speed_accuracy"] = speed_accuracy_chart(
            points, anchors, out_dir / "speed_accuracy.png"
        )
    if tasks:
        drawn["f1_vs_layers"] = f1_vs_layers_chart(budget, tasks, out_dir / "f1_vs_layers.png")
    if runs:
        drawn["layer_masks"] = layer_masks_chart(runs, out_dir / "layer_masks.png")
    if any(curve.lms for _, run in RECIPES for curve in more_text_curves(tagging, run)):
        caption = more_text_caption(lm)
        drawn["lm_more_text"] = more_text_chart(
            tagging, caption, out_dir / "lm_more_text.png", conll_perplexity_curves(lm)
        )
    return drawn
