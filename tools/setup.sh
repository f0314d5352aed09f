#!/usr/bin/env bash
# Set up the workspace: a virtual environment with pinned requirements, then a colcon build.
#
#   tools/setup.sh            set up (first run: minutes; later runs: seconds, nothing changed)
#   tools/setup.sh --force    reinstall requirements and rebuild everything
#   tools/setup.sh --learning also the learning extra: .venv-learning with LeRobot and torch
#                             (requirements-learning.txt; ~8 GB, a few minutes from a mirror)
#
# Without ROS: .venv gets ROS 2 Kilted core from PyPI wheels (requirements.txt).
# With a sourced ROS 2 installation (ROS_DISTRO set): .venv sees the system packages and gets
# only the Python libraries (requirements-py.txt); colcon and rclpy come from the installation.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
force=0
learning=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --learning) learning=1 ;;
    *) printf '[setup] error: unknown option %s (options: --force, --learning)\n' "$arg" >&2; exit 2 ;;
  esac
done
say() { printf '[setup] %s\n' "$*" >&2; }
# need_disk DIR TMP DIR_GB TMP_GB WHAT: exit 2, saying so, when DIR's filesystem has less than
# DIR_GB GB free, or TMP's less than TMP_GB (the sum, where both are one filesystem).
need_disk() {
  local dir="$1" tmp="$2" dir_gb="$3" tmp_gb="$4" what="$5" free_kb tmp_kb
  [[ -d "$tmp" ]] || tmp=/tmp  # (pip's temporary folder then, as Python's tempfile has it)
  free_kb="$(df -Pk "$dir" | awk 'NR == 2 {print $4}')"
  tmp_kb="$(df -Pk "$tmp" | awk 'NR == 2 {print $4}')"
  if [[ "$(stat -c %d "$dir")" == "$(stat -c %d "$tmp" 2>/dev/null)" ]]; then
    dir_gb=$((dir_gb + tmp_gb)); tmp_gb=0
  fi
  if ((free_kb < dir_gb * 1024 * 1024)); then
    say "error: $what needs about $dir_gb GB free on the disk of $dir while it installs; it has"
    say "$((free_kb / 1024 / 1024)) GB ('df -h $dir' tells). Free some and run this again."
    exit 2
  fi
  if ((tmp_gb > 0 && ${tmp_kb:-0} < tmp_gb * 1024 * 1024)); then
    say "error: $what downloads about $tmp_gb GB into $tmp (TMPDIR) while it installs; that disk"
    say "has $((${tmp_kb:-0} / 1024 / 1024)) GB free. Free some, or point TMPDIR elsewhere."
    exit 2
  fi
}

# colcon's setup scripts run the Python path unquoted, and the scripts it installs start with a
# #! line, which cannot hold a space: a path with one fails later, obscurely. Said now.
if [[ "$root" == *[[:space:]]* ]]; then
  say "error: the workspace's path has a space or tab: '$root'. colcon's setup scripts and the"
  say "commands it installs cannot run from such a path; clone the workspace to a path without."
  exit 2
fi

if [[ -n "${ROS_DISTRO:-}" ]]; then
  reqs=requirements-py.txt
  python="${HARNESS_PYTHON:-python3}"
  venv_flags=(--system-site-packages)
  say "using the sourced ROS 2 ${ROS_DISTRO} installation"
else
  reqs=requirements.txt
  python="${HARNESS_PYTHON:-python3.11}"
  venv_flags=()
  if ! command -v "$python" >/dev/null; then
    say "error: $python not found. The embedded path needs Python 3.11 (ROS 2 Kilted wheels are cp311)."
    exit 2
  fi
fi

# 1. Virtual environment and pinned requirements; a stamp of the requirement files skips this
# step when nothing changed.
req_hash="$(cat requirements.txt requirements-py.txt | sha256sum | cut -c1-16)-${ROS_DISTRO:-wheels}"
stamp="$venv/.harness-requirements"
if [[ $force == 1 || ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$req_hash" ]]; then
  [[ -x "$venv/bin/python" ]] || { say "creating $venv"; "$python" -m venv "${venv_flags[@]}" "$venv"; }
  say "installing $reqs (pinned)"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pip==25.3
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$reqs"
  echo "$req_hash" > "$stamp"
fi

# shellcheck disable=SC1091
source "$venv/bin/activate"

if [[ -z "${ROS_DISTRO:-}" ]]; then
  export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
  # 2. The wheels' CMake exports name the build machine's Python; point them at this venv's.
  python "$root/tools/fix_cmake_paths.py" "$VIRTUAL_ENV"
fi

# 3. colcon build, skipped when no build input changed (sources are symlinked, so editing a
# Python module needs no rebuild).
# vendor/ holds interface packages PyPI lacks (tf2_msgs); a ROS installation has its own.
base_paths=(src)
[[ -z "${ROS_DISTRO:-}" ]] && base_paths+=(vendor)
# Only sources count: caches that tests leave in the tree (.hypothesis, __pycache__) do not.
sources() { find "${base_paths[@]}" -type f -not -path '*/.*' -not -path '*/__pycache__/*' "$@"; }
build_hash="$( (sources \( -name package.xml -o -name setup.py -o -name setup.cfg \
  -o -name CMakeLists.txt -o -name '*.msg' -o -name '*.srv' -o -name '*.action' -o -name '*.xacro' \
  -o -path '*/resource/*' \) -print0 | sort -z | xargs -0 sha256sum; sources | sort) \
  | sha256sum | cut -c1-16)"
build_stamp="$root/install/.harness-build"
if [[ $force == 1 || ! -f install/setup.bash || "$(cat "$build_stamp" 2>/dev/null)" != "$build_hash" ]]; then
  say "colcon build"
  colcon --log-base log build --symlink-install --base-paths "${base_paths[@]}" \
    --event-handlers console_cohesion- summary+ status- \
    --cmake-args -DBUILD_TESTING=ON -DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python" >&2
  echo "$build_hash" > "$build_stamp"
else
  say "workspace up to date"
fi
# Every episode starts five Python processes. Where PYTHONDONTWRITEBYTECODE is set (it is on
# this project's machines) none keeps its compiled modules, and each compiled the workspace's
# anew (~0.3 s of CPU a process). Compiled here (~0.1 s when nothing changed); Python reads
# them whatever that variable says.
python -m compileall -q -j 0 "${base_paths[@]}" >/dev/null \
  || say "warning: some modules could not be compiled ahead (python -m compileall src says which)"

# 4. The learning extra, only when asked: its own venv (lerobot's pins differ from ours), with a
# stamp of its requirement file.
if [[ $learning == 1 ]]; then
  lvenv="$root/.venv-learning"
  lhash="$(sha256sum requirements-learning.txt | cut -c1-16)"
  if [[ $force == 1 || ! -x "$lvenv/bin/python" || "$(cat "$lvenv/.harness-requirements" 2>/dev/null)" != "$lhash" ]]; then
    # A first install downloads ~4.8 GB of wheels (PyPI's torch and its CUDA libraries) and
    # unpacks them to ~8.7 GB; the downloads stay in the temporary folder until the install
    # ends. A full disk midway leaves pip's traceback and a half-made venv, so it is said first.
    if ! compgen -G "$lvenv/lib/python3*/site-packages/torch" >/dev/null; then
      need_disk "$(dirname "$lvenv")" "${TMPDIR:-/tmp}" 9 5 "the learning extra"
    fi
    [[ -x "$lvenv/bin/python" ]] || { say "creating $lvenv"; "$python" -m venv "$lvenv"; }
    say "installing the learning extra (requirements-learning.txt: LeRobot, torch; ~8 GB)"
    "$lvenv/bin/python" -m pip install --quiet --disable-pip-version-check pip==25.3
    # No cache: it would keep a second copy of the 4.8 GB of wheels after the install.
    "$lvenv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
      -r requirements-learning.txt
    echo "$lhash" > "$lvenv/.harness-requirements"
  fi
fi
