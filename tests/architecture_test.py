"""
`docs/architecture.md` against the code: its layer rule ("each layer imports only from the
layers above it in this list") holds for every import of `ldnet_allennlp/`, those inside
functions included; `ldnet_allennlp/` and `ldnet_runtime/` have no import cycle; and
`ldnet_runtime/` imports nothing from `ldnet_allennlp/`.

The layers are read from the doc's numbered list (each item's bold names: a folder `name/` or a
top-level module `name.py`), so that the doc and this test cannot drift apart.
"""

import ast
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DOC = PROJECT_ROOT / "docs" / "architecture.md"
PACKAGES = ("ldnet_allennlp", "ldnet_runtime")
# The package's entry points compose every layer: they sit below the list.
ROOT_MODULES = {"ldnet_allennlp", "ldnet_allennlp.__main__"}


def module_files() -> Dict[str, Path]:
    """Every module of `PACKAGES`, by dotted name (a package by its `__init__.py`)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """
    The modules of `modules` that `name` imports anywhere in its file (at module level or inside
    a function): `from a.b import c` counts as `a.b.c` when that is a module, else as `a.b`.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.add(submodule if submodule in modules else source)
    found = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph() -> Dict[str, Set[str]]:
    modules = module_files()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def documented_layers() -> Dict[str, int]:
    """
    The numbered list under `## Layers`: each bold name (`**`patches/`**`, `**`pretrained.py`**`)
    of item n is in layer n.
    """
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    layers: Dict[str, int] = {}
    number = None
    for line in section.splitlines():
        item = re.match(r"^(\d+)\. ", line)
        if item:
            number = int(item.group(1))
        elif line and not line.startswith(" "):
            number = None  # prose after the list
        if number is None:
            continue
        for bold in re.findall(r"\*\*`([\w./]+)`\*\*", line):
            layers[bold.rstrip("/").removesuffix(".py")] = number
    return layers


def layer_of(module: str, layers: Dict[str, int]) -> int:
    """The layer of an `ldnet_allennlp` module: that of its first-level folder or module."""
    first = module.split(".")[1]
    if first not in layers:
        raise AssertionError(
            f"{module}: docs/architecture.md's layer list names no `{first}` (add it to a layer)"
        )
    return layers[first]


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_doc_lists_layers_in_order():
    layers = documented_layers()
    assert layers["patches"] == 1 and layers["modules"] == 2
    assert sorted(set(layers.values())) == list(range(1, max(layers.values()) + 1))


def test_each_layer_imports_only_from_the_layers_above_it():
    layers = documented_layers()
    graph = import_graph()
    wrong: List[Tuple[str, int, str, int]] = []
    for module, targets in sorted(graph.items()):
        if module in ROOT_MODULES or not module.startswith("ldnet_allennlp."):
            continue
        for target in sorted(targets):
            if not target.startswith("ldnet_allennlp.") or target in ROOT_MODULES:
                continue
            if layer_of(target, layers) > layer_of(module, layers):
                wrong.append((module, layer_of(module, layers), target, layer_of(target, layers)))
    assert not wrong, "\n".join(
        f"{module} (layer {a}) imports {target} (layer {b})" for module, a, target, b in wrong
    )


def test_every_package_folder_has_a_layer():
    layers = documented_layers()
    for module in import_graph():
        if module.startswith("ldnet_allennlp.") and module not in ROOT_MODULES:
            layer_of(module, layers)


def test_nothing_imports_the_package_root():
    graph = import_graph()
    assert not [m for m, targets in graph.items() if "ldnet_allennlp" in targets]


def test_the_runtime_imports_nothing_of_ldnet_allennlp():
    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("ldnet_runtime"):
            assert not [t for t in targets if t.startswith("ldnet_allennlp")], module


def test_there_is_no_import_cycle():
    assert cycles(import_graph()) == []


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(graph, expected):
    assert cycles(graph) == expected
