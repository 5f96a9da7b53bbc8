"""The shape the developers' guide asks for, kept by a test: services/ and db/ never import
Streamlit (the CLI and the workers use them without it), pages hold no SQL, HTTP or NVML, and
only services/config reads SHOOTOUT_* variables."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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


def _offenders(folders: list[str], banned: set[str]) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            hits = _imports(path) & banned
            if hits:
                found.append(f"{path.relative_to(ROOT)}: {', '.join(sorted(hits))}")
    return found


def test_services_and_db_never_import_streamlit() -> None:
    assert _offenders(["services", "db"], {"streamlit"}) == []


def test_pages_hold_no_sql_http_or_nvml() -> None:
    banned = {"sqlalchemy", "db", "httpx", "httpx2", "requests", "urllib", "pynvml", "socket"}
    assert _offenders(["app_pages"], banned) == []
    assert not _imports(ROOT / "app.py") & banned


#: The product: where a SHOOTOUT_* variable may be read only through services/config.
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
    config = ROOT / "services" / "config"
    reads = [hit for path in paths if config not in path.parents for hit in _environment_reads(path)]
    assert not reads, (
        "read SHOOTOUT_* settings through services.config.get_settings(), not the environment:\n"
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


#: What every run kind shares: it must not name a feature, or each new kind edits it. (The
#: limits count active runs through the registry but also check a benchmark's own size.)
RUN_CORE = ("lifecycle.py", "run_kinds.py", "worker.py", "processes.py")


def _service_modules(path: Path) -> set[str]:
    """The services.<name> modules `path` imports, anywhere in it (inside functions too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(m.split(".")[1] for m in modules if m.startswith("services.") and m.count(".") >= 1)
    return found


def test_the_run_core_names_no_feature() -> None:
    features = {p.name for p in (ROOT / "services").iterdir() if (p / "__init__.py").exists()}
    features -= {"config"}
    offenders = {
        name: sorted(_service_modules(ROOT / "services" / name) & features) for name in RUN_CORE
    }
    assert not any(offenders.values()), offenders
