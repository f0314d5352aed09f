"""Worker backends, one module each (see harness_worker.station)."""
