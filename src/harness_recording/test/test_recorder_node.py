"""The recorder's receiving thread with a real rclpy node: between messages it waits on them
and on its wake, not on a clock, and a wake ends its wait."""

import os
import threading
import time

import rclpy

from harness_recording import recorder_node


def test_the_receiving_thread_waits_without_a_clock_and_ends_at_a_wake(monkeypatch):
    monkeypatch.setattr(recorder_node, 'IDLE_SLICE_S', 3600.0)  # no slice ends a wait
    # A domain of its own (nothing of another test's episode reaches it).
    rclpy.init(args=['recorder_test'], domain_id=200 + os.getpid() % 30)
    try:
        node = recorder_node.Recorder(None)
        stop = threading.Event()
        thread = threading.Thread(target=node.record, args=(stop,), daemon=True)
        thread.start()
        time.sleep(0.3)
        assert thread.is_alive()  # waiting, with no bag and no message
        stop.set()
        node.wake()
        thread.join(timeout=30)
        assert not thread.is_alive(), 'the wake did not end the wait'
        node.destroy_node()
    finally:
        rclpy.shutdown()


def test_a_warm_recorders_bag_leaves_out_events_published_before_it_opened(tmp_path):
    """A recorder that joined after the last episode's publisher published (one replaced for
    being slow) is given that publisher's kept history as it matches it: none of it goes into
    the next episode's bag, which would otherwise end at the last episode's end event."""
    import json

    from rclpy.serialization import serialize_message
    from std_msgs.msg import String

    from harness_types import names

    rclpy.init(args=['recorder_test'], domain_id=200 + os.getpid() % 30)
    try:
        node = recorder_node.Recorder(None)
        node._from_the_graph = lambda *_: True  # (the driver's publisher, as the graph lists it)
        topic = node.resolve_topic_name(names.EVENTS)
        end = serialize_message(String(data=json.dumps({'type': 'end', 'status': 'finished'})))
        before = time.time_ns()
        node.begin(str(tmp_path / 'bag'), published_from_now=True)
        node._write(topic, names.EVENTS, end, {'source_timestamp': before})
        assert not node.ended.is_set()  # the last episode's end closes nothing
        cell = serialize_message(String(data=json.dumps({'type': 'cell'})))
        node._write(topic, names.EVENTS, cell, {'source_timestamp': 0})  # none given: kept
        node._write(topic, names.EVENTS, end, {'source_timestamp': time.time_ns()})
        assert node.ended.is_set()
        report = node.close_bag()
        assert report['counts'][topic] == 2 and report['earlier_episodes_messages'] == 1
        node.destroy_node()
    finally:
        rclpy.shutdown()
