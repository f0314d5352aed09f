#!/usr/bin/env bash
# Source the ROS installation, the workspace's venv and its overlay, then run the command.
set -e
# shellcheck disable=SC1090
source "/opt/ros/${ROS_DISTRO}/setup.bash"
# shellcheck disable=SC1091
source /harness/.venv/bin/activate
# shellcheck disable=SC1091
set +u; source /harness/install/setup.bash; set -u
exec "$@"
