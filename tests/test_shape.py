"""The shape the developers' guide asks for, kept by a test: the app frame holds no SQL, HTTP
or NVML, only services/core/config reads SHOOTOUT_* variables, one package per feature, one
view per page. That services/ and db/ never import Streamlit and that pages hold no SQL, HTTP
or NVML are import contracts (pyproject.toml, tests/test_import_contracts.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app_pages.registry import NOT_PAGES, PAGES

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_app_frame_holds_no_sql_http_or_nvml() -> None:
    # The pages' own rule is a contract (pyproject.toml: thin-pages); app.py is no package.
    banned = {"sqlalchemy", "db", "httpx", "httpx2", "requests", "urllib", "pynvml", "socket"}
    assert not _imports(ROOT / "app.py") & banned


#: The product: where a SHOOTOUT_* variable may be read only through services/core/config.
PRODUCT = ("services", "db", "web", "commands", "app_pages")
PRODUCT_FILES = ("app.py", "cli.py", "serve.py")
SETTING_NAME = re.compile(r"SHOOTOUT_[A-Z0-9_]*[A-Z0-9]")


def _environment_reads(path: Path, root: Path = ROOT) -> list[str]:
    """Reads of SHOOTOUT_* variables: `os.environ.get("SHOOTOUT_X")`, `os.getenv(...)`,
    `os.environ["SHOOTOUT_X"]`, `"SHOOTOUT_X" in os.environ`, and, in a module that touches the
    environment at all, any other use of a setting's bare name (a helper that reads it; writing
    `env["SHOOTOUT_X"] = ...` for a child process is fine)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    source = ast.get_source_segment
    text = path.read_text()
    touches_environment = False
    written: set[int] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
            touches_environment = True
        if isinstance(node, ast.Name) and node.id in ("environ", "getenv"):
            touches_environment = True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            written.add(id(node.slice))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if not SETTING_NAME.fullmatch(node.value) or id(node) in written:
            continue
        line = text.splitlines()[node.lineno - 1]
        if touches_environment or re.search(r"environ|getenv", line):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {source(text, node)}")
    return found


def test_only_services_config_reads_shootout_variables() -> None:
    paths = [ROOT / name for name in PRODUCT_FILES if (ROOT / name).exists()]
    for folder in PRODUCT:
        paths += sorted((ROOT / folder).rglob("*.py"))
    config = ROOT / "services" / "core" / "config"
    reads = [hit for path in paths if config not in path.parents for hit in _environment_reads(path)]
    assert not reads, (
        "read SHOOTOUT_* settings through services.core.config.get_settings(), not the environment:\n"
        + "\n".join(reads)
    )


def test_the_environment_gate_catches_a_read(tmp_path: Path) -> None:
    module = tmp_path / "reader.py"
    module.write_text('import os\nX = os.environ.get("SHOOTOUT_LIMIT_N")\n')
    helper = tmp_path / "helper.py"
    helper.write_text(
        'import os\ndef _int(n):\n    return os.environ[n]\nY = _int("SHOOTOUT_LIMIT_N")\n'
    )
    writer = tmp_path / "writer.py"
    writer.write_text('import os\nenv = dict(os.environ)\nenv["SHOOTOUT_DATA_DIR"] = "/x"\n')
    for path, reads in ((module, 1), (helper, 1), (writer, 0)):
        assert len(_environment_reads(path, tmp_path)) == reads, path.name


#: Each page's feature package, where its one view module lives (`view.py` or `view/`): the
#: registry of pages says (app_pages/registry.py).
PAGE_FEATURES = {page.module: page.feature for page in PAGES}

#: services/ reads from `ls`: a package per feature, the core below them, a run's stored state
#: (runstate), the team server. The features behind a page come from the registry; these have none.
FEATURES_WITHOUT_A_PAGE = {"client", "engines", "importers", "local_engines", "votes"}
FEATURES = set(PAGE_FEATURES.values()) | FEATURES_WITHOUT_A_PAGE


def test_services_holds_one_package_per_feature_and_no_loose_module() -> None:
    # A folder left with only __pycache__ by a checkout that moved on is not an entry.
    entries = {p.name for p in (ROOT / "services").iterdir() if p.is_file() or any(p.rglob("*.py"))}
    assert entries - {"__init__.py"} == FEATURES | {"core", "runstate", "team"}
    for name in entries - {"__init__.py"}:
        assert (ROOT / "services" / name / "__init__.py").exists(), name


def test_every_page_has_one_view_module_in_its_feature() -> None:
    # Every module of app_pages/ but the frame's is a page, and app.py routes to it.
    pages = {p.stem for p in (ROOT / "app_pages").glob("*.py")} - NOT_PAGES
    assert pages == set(PAGE_FEATURES)
    for page, feature in PAGE_FEATURES.items():
        package = ROOT / "services" / feature
        views = [
            p.name for p in package.iterdir() if p.stem in ("view", "views") or p.stem.endswith("_view")
        ]
        assert views in (["view.py"], ["view"]), (page, views)


#: A part's name starts with its page's (`bench_form.py` draws for Benchmarks).
PART_FEATURES = {**PAGE_FEATURES, "bench": "bench"}


def _services_imported(path: Path) -> set[str]:
    """The services modules `path` imports, as dotted names (a `from services.x import y` of a
    module y counts as services.x.y)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("services"):
            found.update(
                f"{node.module}.{a.name}"
                if (ROOT / Path(*node.module.split("."), a.name)).with_suffix(".py").exists()
                or (ROOT / Path(*node.module.split("."), a.name)).is_dir()
                else node.module
                for a in node.names
            )
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("services"))
    return found


def test_pages_read_services_through_their_view_only() -> None:
    """Pages are thin: a page and its parts read their feature's one view module, and the core
    (errors, safe text, figures); what else the page needs, the view passes on. (common.py is
    the frame every page shares: who is looking, the engines list, the session hook.)"""
    offenders = {}
    files = [ROOT / "app_pages" / page.file for page in PAGES]
    files += [p for p in (ROOT / "app_pages" / "parts").glob("*.py") if p.stem != "__init__"]
    for path in files:
        prefix = path.stem if path.parent.name == "app_pages" else path.stem.split("_")[0]
        view = f"services.{PART_FEATURES[prefix]}.view"
        stray = sorted(m for m in _services_imported(path) if not m.startswith(("services.core.", view)))
        if stray:
            offenders[str(path.relative_to(ROOT))] = stray
    assert not offenders, offenders
