"""The name scalar_mix imports; goes once it imports `seed_overrides` from `tagging`."""

from benchmarks.studies.tagging import seed_overrides  # noqa: F401
