"""The policy servers this workspace can run locally (a catalogue entry's `serve`), by name:
each a factory of one policy per connection and the metadata sent on connect."""

from __future__ import annotations

from collections.abc import Callable


def _scripted_expert() -> tuple[Callable[[], object], dict]:
    from arx_x5_description.embodiment import load_embodiment
    from harness_expert.expert import ScriptedExpert

    from arx_x5_description.urdf import station_urdf

    emb, urdf = load_embodiment(), station_urdf()
    metadata = ScriptedExpert(emb, urdf).metadata
    return lambda: ScriptedExpert(emb, urdf), metadata


SERVABLE: dict[str, Callable[[], tuple[Callable[[], object], dict]]] = {
    'scripted_expert': _scripted_expert,
}


def serve(name: str, host: str, port: int, log: Callable[[str], None] = print) -> int:
    """Serve policy server `name` at host:port until SIGINT or SIGTERM; the exit status."""
    from harness_policy.server import PolicyServer

    factory, metadata = SERVABLE[name]()
    server = PolicyServer(factory, metadata, host, port)  # serve_forever stops on SIGTERM too
    log(f'policy server {name} at ws://{host}:{port} ({metadata.get("kind", "")})')
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.stop()
    return 0
