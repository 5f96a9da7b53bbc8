"""The winning configuration's launch command, to copy: plain (this machine's binary and model,
or the start template as run) and docker (the engine's official image, the Planner's)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from services import local_engines
from services.engines.launching import KindLaunch, get_launch
from services.engines.tuning import KindTuning
from services.tune.launch import render_template
from services.tune.spec import TuneSpec, setting_args, tunings
from services.tune.summary import LaunchCommands


def _env_prefix(env: Mapping[str, str]) -> str:
    return "".join(f"{key}={shlex.quote(value)} " for key, value in env.items())


def kind_launch(kind: str) -> KindLaunch:
    """The kind's launch record (its image and port), the one the Planner uses."""
    found = get_launch(kind)
    if found is None:
        raise LookupError(f"services/engines/{kind}/ has no launch.py: a tunable kind needs one.")
    return found


def launch_commands(spec: TuneSpec, settings: Mapping[str, str]) -> LaunchCommands:
    """{"plain": ..., "docker": ...} for these full settings, quoted for a POSIX shell."""
    tuning = tunings()[spec.kind]
    launch = kind_launch(spec.kind)
    args, env = setting_args(spec.kind, settings)
    local = spec.launcher == "local"
    if local:  # as the tuning run started it
        args = [*args, *local_engines.get_backend(spec.kind).settings_args(dict(settings))]
    port = launch.default_port
    # What ran on this machine's CPU copies to the kind's CPU image, where it has one.
    on_cpu = local and launch.cpu_image is not None
    image = launch.cpu_image if on_cpu and launch.cpu_image else launch.image
    gpus = "" if on_cpu else "--gpus all "
    docker_env = "".join(f"-e {key}={shlex.quote(value)} " for key, value in env.items())
    if spec.launcher == "command":
        plain = shlex.join(
            render_template(spec.start_command, port=port, name="shootout-tuned", args=args)
        )
    else:
        plain = _local_plain(tuning, port, args, env)
    mount, model = tuning.docker_model()
    head = [word.replace("{model}", model) for word in launch.docker_head]
    docker_args = [*head, "--host", "0.0.0.0", "--port", str(port), *args]
    volume = f"-v {shlex.quote(mount)}:/models " if mount else ""
    docker = (
        f"docker run --rm {gpus}-p {port}:{port} {volume}{docker_env}{image} {shlex.join(docker_args)}"
    )
    return {"plain": plain, "docker": docker}


def _local_plain(tuning: KindTuning, port: int, args: list[str], env: Mapping[str, str]) -> str:
    try:
        argv, base_env = local_engines.server_command(tuning.kind, port, args)
    except Exception:  # noqa: BLE001 - not installed here: show the portable form
        return (
            f"{_env_prefix(env)}{tuning.portable_command} --host 127.0.0.1 --port {port} "
            f"{shlex.join(args)}"
        ).strip()
    kept = {k: v for k, v in base_env.items() if k.startswith(tuning.command_env)}
    return _env_prefix({**kept, **env}) + shlex.join(argv)
