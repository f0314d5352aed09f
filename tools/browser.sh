#!/usr/bin/env bash
# Print the path of a Chromium for the report tests; on first use install Debian's `chromium`
# package when this machine can (root, apt-get). Exits 1 with the reason on stderr otherwise.
# The report tests call this and skip with that reason; nothing else needs a browser.
set -euo pipefail
for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null; then command -v "$name"; exit 0; fi
done
if [[ "${HARNESS_INSTALL_BROWSER:-1}" == "0" ]]; then
  echo "no Chromium on PATH and HARNESS_INSTALL_BROWSER=0" >&2; exit 1
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "no Chromium on PATH, and this machine cannot install Debian's (needs root and apt-get)" >&2
  exit 1
fi
echo "[browser] installing Debian's chromium (once; for the report tests)" >&2
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >&2; then
  echo "apt-get could not install chromium" >&2; exit 1
fi
command -v chromium
