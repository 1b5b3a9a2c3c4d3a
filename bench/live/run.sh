#!/usr/bin/env bash
# bench/live/run.sh — the timed runs of one evaluate sweep with and without
# live figures, in alternation, PAIRS times (default 5):
#
#   bench/live/run.sh [PAIRS] [OUTDIR]
#
# "plain": the sweep typed into the REPL (a text display, no figures drawn).
# "live":  the same commands as a notebook cell run headless by
#          'approxtune run' (the kernel's live display: figures redrawn as
#          results arrive, through the agent's gate).
# Then compares the two groups' timed runs with bench/summarize -compare.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pairs=${1:-5}
out=${2:-$(mktemp -d /tmp/approxtune-live.XXXXXX)}
mkdir -p "$out"
bin=${APPROXTUNE:-approxtune}
cmds='workload summa n=2048
space b=64,128,256 grid=1x4,2x2,4x1
policy conditional,eager
tolerance 2^-1,2^-3,2^-5
reps 2
evaluate'
printf '%s\n' "$cmds" >"$out/sweep.atune"
python3 - "$out/sweep.ipynb" "$cmds" <<'PY'
import json, sys
cell = {"cell_type": "code", "id": "sweep", "execution_count": None, "metadata": {}, "outputs": [], "source": sys.argv[2]}
nb = {"cells": [cell], "metadata": {"kernelspec": {"name": "approxtune", "display_name": "approxtune", "language": "approxtune"}}, "nbformat": 4, "nbformat_minor": 5}
json.dump(nb, open(sys.argv[1], "w"))
PY
plain=() live=()
for i in $(seq 1 "$pairs"); do
  # Alternate which goes first, so that drift over the pair is shared.
  for kind in $([ $((i % 2)) = 1 ] && echo "plain live" || echo "live plain"); do
    d="$out/$kind-$i"
    rm -rf "$d"
    start=$(date +%s)
    if [ "$kind" = plain ]; then
      "$bin" repl --no-color --dir "$d" <"$out/sweep.atune" >"$d.log" 2>&1
      plain+=("$d/results.jsonl")
    else
      "$bin" run --dir "$d" -o "$d.ipynb" "$out/sweep.ipynb" >"$d.log" 2>&1
      live+=("$d/results.jsonl")
    fi
    echo "==> $kind $i: $(( $(date +%s) - start )) s ($d)"
  done
done
cd "$here/../.."
go run ./bench/summarize -compare "${plain[@]}" vs "${live[@]}"
