"""
`docs/architecture.md` against the code: its layer rule ("each layer imports only from the
layers above it in this list") holds for every import of `ldnet_allennlp/`, those inside
functions included, and the same rule for `ldnet_runtime/`'s own list of modules;
`ldnet_allennlp/` and `ldnet_runtime/` have no import cycle; `ldnet_runtime/` imports nothing
from `ldnet_allennlp/`, nor torch or AllenNLP; and only the parts of `ldnet_allennlp/` that the
doc names import `ldnet_runtime/`, never its command-line modules.

The layers are read from the doc's numbered lists (each item's bold names: a folder `name/` or a
module `name.py`), and the parts that import the runtime from the bold names of the runtime
section's prose, so that the doc and this test cannot drift apart.
"""

import ast
import re
from pathlib import Path
from typing import Dict, List, Optional, Set

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DOC = PROJECT_ROOT / "docs" / "architecture.md"
PACKAGES = ("ldnet_allennlp", "ldnet_runtime")
# The package's entry points compose every layer: they sit below the list.
ROOT_MODULES = {"ldnet_allennlp", "ldnet_allennlp.__main__"}
PACKAGE_LAYERS = "## Layers"
RUNTIME_SECTION = "## Beside the package: `ldnet_runtime/`"
# What the runtime never imports (the doc's "neither torch nor AllenNLP").
HEAVY_PACKAGES = {"torch", "allennlp", "allennlp_models", "ldnet_allennlp"}
BOLD_NAME = r"\*\*`([\w./]+)`\*\*"


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


def doc_section(title: str) -> str:
    """The text of the doc's section `title`, up to the next `## ` heading."""
    text = DOC.read_text(encoding="utf-8")
    return text.split(title + "\n", 1)[1].split("\n## ", 1)[0]


def documented_layers(title: str = PACKAGE_LAYERS) -> Dict[str, int]:
    """
    The numbered list of section `title`: each bold name (`**`patches/`**`, `**`pretrained.py`**`)
    of item n is in layer n.
    """
    layers: Dict[str, int] = {}
    number = None
    for line in doc_section(title).splitlines():
        item = re.match(r"^(\d+)\. ", line)
        if item:
            number = int(item.group(1))
        elif line and not line.startswith(" "):
            number = None  # prose after the list
        if number is None:
            continue
        for bold in re.findall(BOLD_NAME, line):
            layers[bold.rstrip("/").removesuffix(".py")] = number
    return layers


def documented_runtime_importers() -> Set[str]:
    """
    The parts of `ldnet_allennlp` that the runtime section says import `ldnet_runtime`: the
    bold names of its prose before its numbered list, as dotted prefixes
    (`tagging/commands/ldnet_tag.py` -> `ldnet_allennlp.tagging.commands.ldnet_tag`).
    """
    prose = re.split(r"^1\. ", doc_section(RUNTIME_SECTION), maxsplit=1, flags=re.M)[0]
    names = re.findall(BOLD_NAME, prose)
    return {
        "ldnet_allennlp." + name.rstrip("/").removesuffix(".py").replace("/", ".") for name in names
    }


def external_imports(path: Path) -> Set[str]:
    """The top-level names of every module the file imports absolutely (anywhere in it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def layer_of(module: str, layers: Dict[str, int]) -> int:
    """The layer of a module: that of its first-level folder or module in its package."""
    first = module.split(".")[1]
    if first not in layers:
        raise AssertionError(
            f"{module}: docs/architecture.md's layer list names no `{first}` (add it to a layer)"
        )
    return layers[first]


def layer_violations(package: str, layers: Dict[str, int], roots: Set[str]) -> List[str]:
    """Each import, within `package`, of a module of a later layer than the importer's."""
    wrong = []
    for module, targets in sorted(import_graph().items()):
        if module in roots or not module.startswith(package + "."):
            continue
        for target in sorted(targets):
            if not target.startswith(package + ".") or target in roots:
                continue
            a, b = layer_of(module, layers), layer_of(target, layers)
            if b > a:
                wrong.append(f"{module} (layer {a}) imports {target} (layer {b})")
    return wrong


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
    wrong = layer_violations("ldnet_allennlp", documented_layers(), ROOT_MODULES)
    assert not wrong, "\n".join(wrong)


def test_each_runtime_module_imports_only_from_the_layers_above_it():
    layers = documented_layers(RUNTIME_SECTION)
    assert layers["export_format"] == 1 and layers["tag_command"] == max(layers.values())
    assert sorted(set(layers.values())) == list(range(1, max(layers.values()) + 1))
    runtime = [m for m in import_graph() if m.startswith("ldnet_runtime.")]
    for module in runtime:  # every module has its item
        layer_of(module, layers)
    wrong = layer_violations("ldnet_runtime", layers, {"ldnet_runtime"})
    assert not wrong, "\n".join(wrong)


def test_the_runtime_imports_neither_torch_nor_allennlp():
    for name, path in module_files().items():
        if name.startswith("ldnet_runtime"):
            assert not external_imports(path) & HEAVY_PACKAGES, name


def test_only_the_documented_parts_import_the_runtime_and_never_its_commands():
    graph = import_graph()
    documented = documented_runtime_importers()
    assert documented == {
        "ldnet_allennlp.onnx_export",
        "ldnet_allennlp.tagging.commands.ldnet_tag",
        "ldnet_allennlp.tagging.predictors.ldnet_tagger_predictor",
        "ldnet_allennlp.serving",
    }
    importers = {
        module: {t for t in targets if t.startswith("ldnet_runtime")}
        for module, targets in graph.items()
        if module.startswith("ldnet_allennlp")
    }
    importers = {module: targets for module, targets in importers.items() if targets}

    def part_of(module: str) -> Optional[str]:
        return next((p for p in documented if module == p or module.startswith(p + ".")), None)

    assert not [m for m in importers if part_of(m) is None], "undocumented importers"
    assert {part_of(m) for m in importers} == documented, "a documented part imports nothing"
    commands = {"ldnet_runtime.tag_command", "ldnet_runtime.__main__"}
    assert not [m for m, targets in graph.items() if targets & commands]


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


MAX_FUNCTION_LINES = 80


def long_functions(root=PROJECT_ROOT, folders=("ldnet_allennlp", "ldnet_runtime", "benchmarks")):
    """`path:line name (N lines)` of every function over `MAX_FUNCTION_LINES` lines."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        where = path.relative_to(root)
                        found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_is_longer_than_80_lines(tmp_path):
    assert long_functions() == []
    # the check itself finds a long function, nested ones included
    body = "\n".join(f"        x{i} = {i}" for i in range(80))
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "m.py").write_text(f"class A:\n    def f(self):\n{body}\n")
    assert long_functions(tmp_path, ("long",)) == ["long/m.py:2 f (81 lines)"]


def test_code_configs_and_docs_name_no_issue_numbers():
    """Comments describe the code as it is; issues and history live in the report and git."""
    pattern = re.compile(r"issue [0-9]", re.IGNORECASE)
    found = []
    for folder in ("ldnet_allennlp", "ldnet_runtime", "benchmarks", "training_configs", "docs"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*")):
            if path.suffix in {".py", ".jsonnet", ".md", ".json"} and path.is_file():
                for number, line in enumerate(path.read_text().splitlines(), 1):
                    if pattern.search(line):
                        found.append(f"{path.relative_to(PROJECT_ROOT)}:{number}: {line.strip()}")
    assert found == []
