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
