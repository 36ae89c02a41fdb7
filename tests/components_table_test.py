"""
The component table of docs/components.md (`## Components (registered names)`) and AllenNLP's
registry agree: every name registered by a class of `ldnet_allennlp` is in the table under its
AllenNLP type, and every name in the table is registered. The registry is read, not a list kept
here.
"""

import re
from typing import Set, Tuple

from allennlp.common.registrable import Registrable

import ldnet_allennlp  # noqa: F401  (registers every component)
from tests.conftest import PROJECT_ROOT

COMPONENTS_PAGE = PROJECT_ROOT / "docs" / "components.md"
TABLE_HEADING = "## Components (registered names)"


def registered_names() -> Set[Tuple[str, str]]:
    """`(AllenNLP base class, name)` of every registration whose class is ours."""
    return {
        (base.__name__, name)
        for base, names in Registrable._registry.items()
        for name, (subclass, _) in names.items()
        if subclass.__module__.startswith("ldnet_allennlp.")
    }


def table_names() -> Set[Tuple[str, str]]:
    """`(AllenNLP type, name)` of every row of the components table (`subcommand` →
    `Subcommand`)."""
    page = COMPONENTS_PAGE.read_text(encoding="utf-8")
    table = page.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("|")][2:]  # header, rule
    names = set()
    for row in rows:
        what, kind, registered_as = [cell.strip() for cell in row.strip("|").split(" | ")]
        kind = "Subcommand" if kind == "subcommand" else kind.strip("`")
        registered_as = re.sub(r"\(.*?\)", "", registered_as)  # "(allennlp-models' `crf_tagger`)"
        for name in re.findall(r"`([^`]+)`", registered_as):
            names.add((kind, name.removeprefix("allennlp ")))
    return names


def test_every_registered_name_is_in_the_components_table():
    missing = registered_names() - table_names()
    assert not missing, f"registered but not in docs/components.md's table: {sorted(missing)}"


def test_every_name_in_the_components_table_is_registered():
    unknown = table_names() - registered_names()
    assert not unknown, f"in docs/components.md's table but not registered by us: {sorted(unknown)}"
