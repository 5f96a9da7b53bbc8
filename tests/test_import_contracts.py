"""The layers (docs/architecture.md, "Layers"): `lint-imports` keeps the contract that
pyproject.toml declares, the doc lists the same layers, and what import-linter cannot see
(modules loaded by name) is checked here."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from shootout.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PYPROJECT = ROOT / "pyproject.toml"


def _contract() -> dict:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return layers


def _layer_of(module: str) -> int | None:
    """The index of the layer `module` belongs to, top first; None outside every layer."""
    for index, layer in enumerate(_contract()["layers"]):
        for name in re.split(r"\s*[|:]\s*", layer):
            if module == name or module.startswith(name + "."):
                return index
    return None


def test_lint_imports_keeps_the_contracts() -> None:
    # Its cwd first on the import path: this checkout's code is what it reads.
    answer = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout + answer.stderr


def test_every_let_through_import_says_why() -> None:
    """An ignored import has a comment above it (entries in a row share one); the options
    that let whole kinds of import through are not used without one."""
    text = PYPROJECT.read_text(encoding="utf-8")
    bare = []
    for block in text.split("ignore_imports = [")[1:]:
        explained = False
        for line in (line.strip() for line in block.split("]", 1)[0].splitlines()[1:]):
            if line.startswith("#"):
                explained = True
            elif line and not explained:
                bare.append(line)
    assert not bare, bare
    for option in ("exclude_type_checking_imports", "allow_indirect_imports"):
        for number, line in enumerate(text.splitlines()):
            if line.startswith(option):
                assert text.splitlines()[number - 1].startswith("#"), option


def test_the_layers_let_no_import_through_and_pair_no_packages() -> None:
    """Every layer stands on the ones below it alone (docs/architecture.md, "Layers"): no import
    is excused, and no two packages share a layer as `a : b`, which would let them import each other."""
    contract = _contract()
    assert not contract.get("ignore_imports")
    assert [layer for layer in contract["layers"] if ":" in layer] == []
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    (acyclic,) = [c for c in config["contracts"] if c["id"] == "acyclic"]
    # Between the packages of services/, and inside every package at every depth, lets nothing through.
    assert {"services", "services.**"} <= set(acyclic["ancestors"])
    assert not acyclic.get("ignore_imports")


def _doc_layers() -> list[str]:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. `([^`]+)`", section, flags=re.MULTILINE)


def test_the_architecture_doc_lists_the_contracts_layers() -> None:
    assert _doc_layers() == _contract()["layers"]


def test_every_product_package_sits_in_a_layer() -> None:
    roots = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    packages = [
        f"services.{p.name}" for p in (ROOT / "services").iterdir() if (p / "__init__.py").exists()
    ]
    packages += [name for name in roots["root_packages"] if name != "services"]
    assert [name for name in packages if _layer_of(name) is None] == []


#: Loaders of modules by name that load above their own layer, and why that is sound.
LOADS_UPWARD = {
    # Each feature's run_kind.py registers its kind with the core (the worker and restart
    # recovery treat runs alike); the contract checks what each of those modules imports.
    "services.runstate.run_kinds",
}


def _loaded_by_name() -> dict[str, list[str]]:
    """Each loader of modules by name, and the modules it loads."""
    run_kinds = [
        f"services.{path.parent.name}.run_kind"
        for path in sorted((ROOT / "services").glob("*/run_kind.py"))
    ]
    engines = ROOT / "services" / "engines"
    kinds = [p for p in sorted(engines.iterdir()) if (p / "__init__.py").exists()]
    parts = [f"services.engines.{p.name}.{m.stem}" for p in kinds for m in p.glob("*.py")]
    return {
        "shootout.cli": sorted(set(COMMANDS.values())),
        "services.runstate.run_kinds": run_kinds,
        "services.engines.registry": [f"services.engines.{p.name}" for p in kinds] + parts,
    }


def test_modules_loaded_by_name_sit_at_or_below_their_loader() -> None:
    loaded = _loaded_by_name()
    assert len(loaded["services.runstate.run_kinds"]) >= 5
    wrong = {}
    for loader, modules in loaded.items():
        own = _layer_of(loader)
        assert own is not None, loader
        for module in modules:
            path = ROOT / Path(*module.split("."))
            layer = _layer_of(module)
            exists = path.with_suffix(".py").exists() or (path / "__init__.py").exists()
            if not exists or layer is None or (layer < own and loader not in LOADS_UPWARD):
                wrong[module] = loader
    assert not wrong, wrong
