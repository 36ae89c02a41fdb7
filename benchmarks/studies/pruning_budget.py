"""`python -m benchmarks pruning_budget`: the budget sweep of the pruning study (`pruning`)."""

from benchmarks.studies.pruning import BUDGET_STUDY as STUDY  # noqa: F401
