#!/usr/bin/env bash
# The whole test suite: set up (first use), lint, colcon test, and a verdict from the results.
# Exits non-zero when the set-up or build fails, lint fails, any test fails, or no test ran.
# Extra arguments go to colcon test (e.g. --packages-select harness_shield).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The learning extra too (LeRobot, torch: ~8 GB, minutes once): the suite trains a tiny policy
# with it, serves it, and reads the datasets with LeRobot itself.
tools/setup.sh --learning
# shellcheck disable=SC1091
source .venv/bin/activate
export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
# shellcheck disable=SC1091
set +u; source install/setup.bash; set -u

echo "[test] ruff"
ruff check .
ruff format --check .

echo "[test] colcon test"
rm -rf build/*/test_results build/*/pytest.xml
status=0
colcon_test() {
  colcon --log-base "$1" test --base-paths src --event-handlers console_cohesion+ summary+ status- \
    --return-code-on-test-failure "${@:2}"
}
if [[ $# -gt 0 ]]; then
  colcon_test log "$@" || status=$?
else
  # colcon tests packages in dependency order, so harness_bringup (the end-to-end episodes,
  # the longest) would wait for all the others; it depends on none of their test results, so
  # it runs beside them. Each invocation has its own log folder.
  colcon_test log/bringup --packages-select harness_bringup &
  bringup=$!
  colcon_test log --packages-skip harness_bringup || status=$?
  wait "$bringup" || status=$?
fi

# colcon test-result reads every result file; it exits 1 on any failure or error.
colcon test-result --test-result-base build --verbose || status=1
summary="$(colcon test-result --test-result-base build | tail -n 1 || true)"
# "Summary: 42 tests, 0 errors, 1 failure, 3 skipped"
read -r total errors failures skipped < <(echo "$summary" |
  sed -E 's/Summary: ([0-9]+) tests?, ([0-9]+) errors?, ([0-9]+) failures?, ([0-9]+) skipped/\1 \2 \3 \4/')
if ! [[ "$total" =~ ^[0-9]+$ ]]; then
  echo "[test] could not read the test summary: '$summary'"
  exit 1
fi
failed=$((errors + failures))
echo "$((total - failed - skipped)) passed, $failed failed, $skipped skipped"
if [[ "$total" == 0 ]]; then
  echo "[test] no test ran"
  exit 1
fi
exit "$status"
