#!/usr/bin/env bash
# The flywheel's loop end to end on lift_cube, as it was run for issue 50 (about 45 minutes on
# 2 cores): a deliberately worse candidate (5 demonstrations), then
# collect -> train -> gate -> plan from the failures -> collect -> train -> gate -> plan.
# Its own catalogue (the shipped one without a lift policy: the first incumbent is the programs
# alone), its own runs and its adoption log, all under OUT.
#   tools/flywheel_loop.sh OUT
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: tools/flywheel_loop.sh OUT (a new folder)" >&2
  exit 2
fi
out="$1"
if [[ -e "$out" ]]; then
  echo "tools/flywheel_loop.sh: $out exists: choose a new folder" >&2
  exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
h="$root/harness"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
"$root/tools/setup.sh" >&2
"$root/.venv/bin/python" - "$root/config/policies.yaml" "$out/policies.yaml" <<'EOF'
import sys
from pathlib import Path

import yaml

shipped, target = Path(sys.argv[1]), Path(sys.argv[2])
policies = yaml.safe_load(shipped.read_text())['policies']
kept = {n: e for n, e in policies.items() if 'lift' not in e.get('learned', [])}
for entry in kept.values():
    if entry.get('checkpoint'):
        entry['checkpoint'] = str((shipped.parent / entry['checkpoint']).resolve())
head = '# The loop catalogue: the shipped one without a lift policy.\n'
target.write_text(head + yaml.safe_dump({'policies': kept}, sort_keys=False))
EOF
train=(--policy act --width 128 --batch-size 32)
gate=(--for lift_cube --policies "$out/policies.yaml" --layouts random:10)
"$h" demos lift_cube --layouts random:5 --seed-base 3000 --image-size 48x64 --out "$out/demos5"
"$h" policy train --dataset "$out/demos5/dataset" --out "$out/train5" "${train[@]}" --steps 1500
"$h" policy adopt "$out/train5" "${gate[@]}" --seed-base 9000 --out "$out/gate0"
"$h" demos lift_cube --layouts random:20 --seed-base 3100 --image-size 48x64 --out "$out/demos1"
"$h" policy train --dataset "$out/demos1/dataset" --out "$out/train1" "${train[@]}" --steps 3000
"$h" policy adopt "$out/train1" "${gate[@]}" --seed-base 9100 --out "$out/gate1"
"$h" plan-collection "$out/demos1" "$out/gate1" --budget 20 --tasks lift_cube --out "$out/plan2.json"
"$h" demos --plan "$out/plan2.json" --include "$out/demos1" --image-size 48x64 --out "$out/demos2"
"$h" policy train --dataset "$out/demos2/dataset" --out "$out/train2" "${train[@]}" --steps 3000
"$h" policy adopt "$out/train2" "${gate[@]}" --seed-base 9200 --out "$out/gate2"
"$h" plan-collection "$out/demos2" "$out/gate2" --budget 20 --tasks lift_cube --out "$out/plan3.json"
echo "the loop's decisions: $out/adoption_log.jsonl; its catalogue: $out/policies.yaml"
