"""One home per engine kind: the Planner's (launch commands, the engines reference) and Tune's
registries are exactly the kinds whose packages provide them, and a kind's docker image and
port read the same on both pages."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import services.engines
from services.engines import kinds
from services.planner import engines_reference
from services.planner.launch import LaunchOptions, build_launch, launch_engines
from services.tune.commands import launch_commands
from services.tune.spec import TuneSpec, catalogue

PACKAGES = Path(services.engines.__file__).parent
#: docker run's options that take a value (the next word); the image is the first other word.
_VALUED = {"-p", "-v", "-e", "--env", "--gpus", "--shm-size", "--ulimit", "--name"}


def packages_with(part: str) -> set[str]:
    return {found.parent.name for found in PACKAGES.glob(f"*/{part}.py")}


def image_and_port(docker: str) -> tuple[str, int]:
    """The image a `docker run` command starts, and the host port it publishes."""
    words = shlex.split(docker[docker.index("docker run") :].replace("\\\n", " "))[2:]
    port = None
    index = 0
    while words[index].startswith("-"):
        if words[index] == "-p":
            port = int(words[index + 1].split(":")[-2])
        index += 2 if words[index] in _VALUED else 1
    assert port is not None, docker
    return words[index], port


def test_the_registries_list_exactly_the_kinds_whose_packages_provide_them() -> None:
    launchable = packages_with("launch")
    assert launchable >= {"vllm", "sglang", "trtllm", "llamacpp", "tgi", "ollama"}
    assert set(launch_engines()) == launchable
    assert set(catalogue()) == packages_with("tuning")
    assert set(engines_reference.tables().engines) == packages_with("reference")
    # Each such package is an engine kind's own (its adapter is the package).
    assert launchable | packages_with("tuning") <= set(kinds())
    assert next(iter(launch_engines())) == "vllm"  # the Planner form's default


@pytest.mark.parametrize("kind", sorted(catalogue()))
def test_a_kinds_image_and_port_are_the_same_in_planner_and_tune(kind: str) -> None:
    planned = build_launch(LaunchOptions(kind, model="org/model"))
    tuned = launch_commands(
        TuneSpec(kind=kind, launcher="command", start_command="serve --port {port} {args}"), {}
    )
    image, port = image_and_port(planned.docker)
    assert image_and_port(tuned["docker"]) == (image, port)
    assert planned.base_url.endswith(f":{port}")
    assert re.search(rf"--port {port}\b", tuned["plain"])
