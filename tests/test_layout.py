"""The layout the README promises: imports point one way (errors, http_answers and schemas <- protocol <- compiler <-
targets and marketplace <- lsp <- cli), no two modules need each other (no circle, counting type-only and
function-level imports), no private name crosses a module, the CLI holds no backend logic (it reaches backends only through the registry), and
no module in a target package repeats the package's name as a prefix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

#: Where each sub-package of the one `paictl` namespace lives in the tree (pyproject's package-dir).
PACKAGE_DIRS = {"paictl": ROOT / "src" / "paictl", "paictl.protocol": ROOT / "protocol",
                "paictl.compiler": ROOT / "compiler", "paictl.schemas": ROOT / "schemas",
                "paictl.targets": ROOT / "targets", "paictl.marketplace": ROOT / "marketplace"}
#: The whole order, ground first: a module may import its own layer and the layers of lower floors only. Layers on
#: one floor (targets, marketplace) do not import each other. The package's own `__init__` (the lazy Python API)
#: and `__main__` stand above everything.
FLOORS = [("errors", "http_answers", "schemas"), ("protocol",), ("compiler",), ("targets", "marketplace"), ("lsp",),
          ("cli",)]

LAYERS = {"protocol": ROOT / "protocol", "compiler": ROOT / "compiler", "targets": ROOT / "targets",
          "cli": ROOT / "src" / "paictl" / "cli"}
ORDER = ["protocol", "compiler", "targets", "cli"]
#: What the commands shared by every target may import from the targets layer: the registries and the shared
#: vocabulary, never a backend. A target's own command group (`paictl grass ...`, `paictl openpai ...`) may use its
#: own package, and nothing in the CLI may reach the Kubernetes or local-runner machinery.
#: `compile --space` compiles every trial of a sweep: the sweep's preparation, which reaches no backend.
CLI_MAY_IMPORT = {"paictl.targets", "paictl.targets.backend", "paictl.targets.compiled", "paictl.targets.states",
                  "paictl.targets.sweep.prepare"}
SHARED_COMMANDS = ("app.py", "compile_cmd.py", "compile_run.py", "run_cmds.py", "submit_run.py", "jobinput.py",
                   "live.py", "errors.py", "entry.py", "validate_cmd.py", "report.py", "output.py")
NEVER_FROM_CLI = ("paictl.targets.kube", "paictl.targets.local")


def module_files() -> dict[str, Path]:
    """Every module of the product by its dotted name."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(".".join([package, *parts]), path)
    return found


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """(module -> the product modules it imports anywhere: top level, functions, TYPE_CHECKING, relative),
    and every (importer, module, name) where a private name is imported from another module."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    private: list[tuple[str, str, str]] = []
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {alias.name for alias in node.names if alias.name in files}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source not in files:
                    continue
                for alias in node.names:
                    if f"{source}.{alias.name}" in files:
                        deps.add(f"{source}.{alias.name}")
                        continue
                    deps.add(source)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append((module, source, alias.name))
        # a package's __init__ runs before its modules: importing it from inside is no edge of the module's own
        graph[module] = {d for d in deps if d != module and not module.startswith(d + ".")}
    return graph, private


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def test_no_two_modules_import_each_other():
    graph, _ = import_graph()
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_is_imported_from_another_module():
    _, private = import_graph()
    assert private == []


def test_every_floor_imports_only_itself_and_the_floors_below():
    graph, _ = import_graph()
    floor_of = {layer: level for level, layers in enumerate(FLOORS) for layer in layers}
    wrong = []
    for module, deps in graph.items():
        layer = module.split(".")[1] if module.count(".") else None
        if layer not in floor_of:
            continue  # paictl/__init__ (the lazy API) and __main__: the top
        for dep in deps:
            other = dep.split(".")[1] if dep.count(".") else "paictl"
            if other != layer and floor_of.get(other, len(FLOORS)) >= floor_of[layer]:
                wrong.append(f"{module} imports {dep}")
    assert wrong == []


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return {name for name in found if name.startswith("paictl")}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


@pytest.mark.parametrize("layer", ORDER)
def test_imports_point_one_way(layer):
    allowed = set(ORDER[:ORDER.index(layer) + 1])
    for path in LAYERS[layer].rglob("*.py"):
        wrong = {m for m in imported_modules(path) if layer_of(m) not in allowed | {None}}
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_the_cli_reaches_backends_only_through_the_registry():
    for path in LAYERS["cli"].rglob("*.py"):
        reached = {m for m in imported_modules(path) if layer_of(m) == "targets"}
        machinery = {m for m in reached if m.startswith(NEVER_FROM_CLI)}
        assert not machinery, f"{path.relative_to(ROOT)} imports {sorted(machinery)}"
        if path.name in SHARED_COMMANDS:
            assert reached <= CLI_MAY_IMPORT, f"{path.relative_to(ROOT)} imports {sorted(reached - CLI_MAY_IMPORT)}"
        else:  # a target's own command group: only that target's package
            own = path.stem.removesuffix("_cmd")
            foreign = {m for m in reached - CLI_MAY_IMPORT if not m.startswith(f"paictl.targets.{own}")}
            assert not foreign, f"{path.relative_to(ROOT)} imports {sorted(foreign)}"


def test_command_modules_never_import_the_app():
    for path in LAYERS["cli"].glob("*_cmd*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
        assert "app" not in relative and "paictl.cli.app" not in imported_modules(path), path.name


def test_no_module_in_a_target_package_carries_the_package_name_as_a_prefix():
    packages = [p for p in LAYERS["targets"].iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    assert {"framework", "mars", "local", "kube"} <= {p.name for p in packages}
    for package in packages:
        prefixed = [m.name for m in package.glob("*.py") if m.stem.startswith(package.name + "_")]
        assert not prefixed, f"targets/{package.name}: {prefixed}"
    flat = [m.name for m in LAYERS["targets"].glob("*.py")
            if any(m.stem.startswith(p.name + "_") or m.stem == p.name for p in packages)]
    assert not flat, f"modules of a target package left at targets/: {flat}"


def test_every_diagnostic_code_is_defined_once():
    """Targets add codes in parallel; a second definition of a key in the CODES literal would silently win."""
    tree = ast.parse((ROOT / "protocol" / "codes.py").read_text(encoding="utf-8"))
    literals = [node for node in ast.walk(tree) if isinstance(node, ast.Dict) and len(node.keys) > 50]
    assert literals, "the CODES literal was not found"
    keys = [key.value for key in literals[0].keys if isinstance(key, ast.Constant)]
    assert len(keys) == len(set(keys)), sorted({k for k in keys if keys.count(k) > 1})
