"""The policy servers this workspace can run locally (a catalogue entry's `serve`), by name:
each a factory of one policy per connection and the metadata sent on connect; and `lerobot`,
a trained checkpoint (the entry's `checkpoint`), served by harness_learning in the learning
extra's environment (torch and LeRobot live there)."""

from __future__ import annotations

from collections.abc import Callable

from harness_policy.protocol import Policy


def _scripted_expert() -> tuple[Callable[[], Policy], dict]:
    from arx_x5_description.embodiment import load_embodiment
    from harness_expert.expert import ScriptedExpert

    from arx_x5_description.urdf import station_urdf

    emb, urdf = load_embodiment(), station_urdf()
    metadata = ScriptedExpert(emb, urdf).metadata
    return lambda: ScriptedExpert(emb, urdf), metadata


SERVABLE: dict[str, Callable[[], tuple[Callable[[], Policy], dict]]] = {
    'scripted_expert': _scripted_expert,
}
LEROBOT = 'lerobot'  # a trained checkpoint
SERVERS = (*SERVABLE, LEROBOT)


def serve_trained(name: str, checkpoint: str, host: str, port: int, log=print) -> int:
    """Serve the trained policy at `checkpoint` (a `harness policy train` folder) in the
    learning extra's environment, installing it first when it is missing; replaces this
    process (its signals reach the server)."""
    import os

    from harness_policy.learning_env import LearningEnvError, ensure_learning_python

    try:
        python = ensure_learning_python(log)
    except LearningEnvError as exc:
        log(f'policy server {name}: {exc}')
        return 2
    command = [python, '-m', 'harness_learning.serve', checkpoint, '--name', name]
    os.execv(python, [*command, '--host', host, '--port', str(port)])
    return 0  # not reached


def serve(name: str, host: str, port: int, log: Callable[[str], None] = print) -> int:
    """Serve policy server `name` at host:port until SIGINT or SIGTERM; the exit status (2
    when the port cannot be bound, 1 when the server stopped taking connections)."""
    from harness_policy.server import PolicyServer

    factory, metadata = SERVABLE[name]()
    server = PolicyServer(factory, metadata, host, port)
    try:
        server.start()
    except OSError as exc:
        log(f'policy server {name} cannot listen at ws://{host}:{port}: {exc.strerror or exc}')
        return 2
    log(f'policy server {name} at {server.url} ({metadata.get("kind", "")})')
    if ended := server.serve_forever():  # '' on Ctrl-C or SIGTERM, the server stopped
        log(f'policy server {name}: {ended}')
        return 1
    return 0
