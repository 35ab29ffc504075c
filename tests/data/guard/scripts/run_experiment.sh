#!/bin/bash
set -euo pipefail
OUT="${OUT:-results}"
mkdir -p "$OUT"
for seed in 1 2 3; do
  python train.py --seed "$seed" --out "$OUT/seed$seed"
done
rm -rf "$OUT/tmp"
