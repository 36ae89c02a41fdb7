"""
The benchmarks' one entry point:

    python -m benchmarks --help                     # the studies, one line each
    python -m benchmarks <study> [--stage S ...] [the study's own options]
    python -m benchmarks <study> --list-stages
    python -m benchmarks report [--check]           # BENCHMARKS.md and its charts
"""

import argparse
from typing import List, Optional, Sequence

from benchmarks.harness.study import Study
from benchmarks.studies import all_studies


def build_parser(studies: Sequence[Study]) -> argparse.ArgumentParser:
    """One sub-command per study (its stages and its own options), and `report`."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run a benchmark study, or render BENCHMARKS.md from the results files.",
    )
    commands = parser.add_subparsers(dest="command", metavar="<study>|report", required=True)
    for study in studies:
        sub = commands.add_parser(study.name, help=study.description, description=study.description)
        names = [stage.name for stage in study.stages]
        chosen = f"run only these stages (in the study's order): {', '.join(names)}"
        sub.add_argument(
            "--stage", dest="stages", nargs="+", choices=names, metavar="STAGE", help=chosen
        )
        sub.add_argument("--list-stages", action="store_true", help="list the stages, then stop")
        if study.add_arguments is not None:
            study.add_arguments(sub)
        sub.set_defaults(study=study)
    report = commands.add_parser(
        "report", help="render BENCHMARKS.md and the charts from benchmarks/results/"
    )
    check = "write nothing; exit 1 if BENCHMARKS.md is not what the results render to"
    report.add_argument("--check", action="store_true", help=check)
    report.set_defaults(study=None)
    return parser


def run_study(study: Study, args: argparse.Namespace) -> None:
    """The stages of `study` that `args.stages` names (all by default), in the study's order."""
    if args.list_stages:
        for stage in study.stages:
            print(f"{stage.name}: {stage.help}" if stage.help else stage.name)
        return
    for stage in study.stages:
        if not args.stages or stage.name in args.stages:
            print(f"[{study.name}] stage {stage.name}", flush=True)
            stage.run(args)


def main(argv: Optional[List[str]] = None, studies: Optional[Sequence[Study]] = None) -> None:
    studies = all_studies() if studies is None else studies
    args = build_parser(studies).parse_args(argv)  # None: sys.argv[1:]
    if args.study is None:
        from benchmarks.report.render import main as render_report

        render_report(check=args.check)
    else:
        run_study(args.study, args)


if __name__ == "__main__":
    main()
