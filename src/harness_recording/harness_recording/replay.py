"""Reading a run's bag for replay: what it holds and its messages in recording order, with the
times to publish them at. Pure (rosbags, no rclpy); `replay_node.py` publishes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rosbags.interfaces import QosDurability

from harness_recording.bag import reader_of, unclosed, unclosed_note


class ReplayError(ValueError):
    """The run has no readable bag; the message says why."""


class DamagedBagError(ReplayError):
    """The bag could not be read on past a message (the message says where and why)."""


@dataclass(frozen=True)
class RecordedTopic:
    """One topic of a bag: its type, how many messages, and whether its publisher was latched
    (transient local: republished so, for late subscribers such as rviz)."""

    name: str
    msgtype: str
    count: int
    latched: bool


def bag_of(run: Path) -> Path:
    """A run folder's bag (or `run` itself when it is a bag folder)."""
    run = Path(run)
    for candidate in (run / 'bag', run):
        if (candidate / 'metadata.yaml').is_file():
            return candidate
    for candidate in (run / 'bag', run):
        if unclosed(candidate):
            raise ReplayError(unclosed_note(candidate))
    raise ReplayError(f'{run} is neither a run folder with a bag/ nor a bag folder')


def topics(bag: Path) -> list[RecordedTopic]:
    """The bag's topics (one entry per topic, whatever its connections)."""
    try:
        with reader_of(bag) as reader:
            out: dict[str, RecordedTopic] = {}
            for c in reader.connections:
                profiles = getattr(c.ext, 'offered_qos_profiles', []) or []
                latched = any(p.durability == QosDurability.TRANSIENT_LOCAL for p in profiles)
                known = out.get(c.topic)
                count = c.msgcount + (known.count if known else 0)
                out[c.topic] = RecordedTopic(c.topic, c.msgtype, count, latched)
            return sorted(out.values(), key=lambda t: t.name)
    except Exception as exc:  # rosbags raises several kinds for a damaged bag
        raise ReplayError(f'{bag} cannot be read: {exc}') from None


def messages(bag: Path) -> Iterator[tuple[int, str, bytes]]:
    """(recording time in ns, topic, serialized CDR) in recording order; DamagedBagError where
    the bag cannot be read on (a record cut short or overwritten)."""
    read = 0
    try:
        with reader_of(bag) as reader:
            for connection, stamp_ns, raw in reader.messages():
                read += 1
                yield stamp_ns, connection.topic, bytes(raw)
    except GeneratorExit:
        raise
    except Exception as exc:  # rosbags raises several kinds for a damaged record
        said = ' '.join(f'{type(exc).__name__}: {exc}'.split())[:300]
        raise DamagedBagError(f'{bag} is damaged after message {read}: {said}') from None


def due(stamp_ns: int, first_ns: int, rate: float) -> float:
    """Seconds after the start of playback at which a message recorded at `stamp_ns` is due
    (the recording's own pace, `rate` times faster)."""
    if rate <= 0:
        raise ValueError(f'rate must be positive, not {rate}')
    return max(0.0, (stamp_ns - first_ns) / 1e9 / rate)
