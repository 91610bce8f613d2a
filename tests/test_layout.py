"""The layout the README promises: imports point one way (protocol <- compiler <- targets <- cli), the CLI holds no
backend logic (it reaches backends only through the registry), and no module in a target package repeats the
package's name as a prefix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

LAYERS = {"protocol": ROOT / "protocol", "compiler": ROOT / "compiler", "targets": ROOT / "targets",
          "cli": ROOT / "src" / "paictl" / "cli"}
ORDER = ["protocol", "compiler", "targets", "cli"]
#: What the commands shared by every target may import from the targets layer: the registries and the shared
#: vocabulary, never a backend. A target's own command group (`paictl grass ...`, `paictl openpai ...`) may use its
#: own package, and nothing in the CLI may reach the Kubernetes or local-runner machinery.
CLI_MAY_IMPORT = {"paictl.targets", "paictl.targets.backend", "paictl.targets.compiled", "paictl.targets.states"}
SHARED_COMMANDS = ("app.py", "compile_cmd.py", "compile_run.py", "run_cmds.py", "submit_run.py", "jobinput.py",
                   "live.py", "errors.py", "entry.py", "validate_cmd.py", "report.py", "output.py")
NEVER_FROM_CLI = ("paictl.targets.kube", "paictl.targets.local")


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
