# Entry points of the workspace. Each target sets up on first use (tools/setup.sh).
SHELL := /bin/bash
.PHONY: setup test lint format perf clean

setup:
	tools/setup.sh

test:
	tools/test.sh

lint:
	tools/setup.sh && .venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	tools/setup.sh && .venv/bin/ruff format . && .venv/bin/ruff check --fix .

perf:
	tools/setup.sh && source .venv/bin/activate && export AMENT_PREFIX_PATH=$$VIRTUAL_ENV && \
		source install/setup.bash && \
		for b in shield kinematics worker skills episode perception policy; do \
			python perf/$$b.py --save || exit 1; done && python tools/perf_docs.py

clean:
	rm -rf build install log
