# Entry points of the workspace. Each target sets up on first use (tools/setup.sh).
.PHONY: setup test lint format bench clean

setup:
	tools/setup.sh

test:
	tools/test.sh

lint:
	tools/setup.sh && .venv/bin/ruff check . && .venv/bin/ruff format --check .

format:
	tools/setup.sh && .venv/bin/ruff format . && .venv/bin/ruff check --fix .

bench:
	tools/setup.sh && . install/setup.bash && for b in bench/*.py; do python $$b; done

clean:
	rm -rf build install log
