#!/usr/bin/env bash
# A lent GPU's prepared session (issue 51), one command for a machine that has a GPU, python3
# with torch, numpy, pandas, scipy, numba, typer and rich, but neither recaudit installed nor
# network (recaudit pins torch==2.13, so the checkout runs from src/ with the machine's torch):
#
#   bash benchmarks/gpu_session.sh --prepare      # here, once: fills .gpu/ (git-ignored)
#   bash benchmarks/gpu_session.sh MINUTES [DEVICE]   # there, with .gpu/ carried beside src/
#
# --prepare copies the data the queue trains on (Wikipedia, Foursquare and ML-100k, from
# $RECAUDIT_MIRROR and the recbole wheel, as recaudit resolves them) into .gpu/data and
# downloads the wheel of what such a machine lacked before (duckdb, the version here) for
# CPython 3.11 and 3.12+ into .gpu/wheels: about 60 MB in all, under a carry's 64 MiB.
#
# On the GPU, into $OUT (default out/gpu):
# 1. gpu.txt: the device, python and torch, and what was installed from .gpu/wheels;
# 2. betello-{sasrec,gru4rec}.json: Betello et al. 2023's models at their settings (the
#    @betello2023 presets: prefix samples, batch 4,096), 2 epochs on ML-100k (users with
#    at least 10 interactions, temporal 90/10 split), as the CPU's cost was measured
#    (src/recaudit/reproduce/_betello2023/__init__.py, COST): seconds per epoch on the GPU;
# 3. gpu-queue/: `recaudit reproduce queue` for the minutes left of MINUTES (stacks of 16):
#    its stores, queue.json (what each item holds, the `recaudit merge` commands) and the
#    kept state of the fits its timer stopped (<store>.fits.d).
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--prepare" ]; then
    set -e
    py=${PYTHON:-.venv/bin/python}
    export RECAUDIT_MIRROR=${RECAUDIT_MIRROR:-../shared/data}
    rm -rf .gpu && mkdir -p .gpu/data .gpu/wheels
    for name in wikipedia foursquare ml-100k; do
        path=$("$py" -c "from recaudit.data import datasets; print(datasets.fetch('$name'))")
        case $name in ml-100k) cp "$path" .gpu/data/ml-100k.inter ;; *) cp "$path" .gpu/data/ ;; esac
    done
    for v in 3.11 3.12; do
        pip download -q --no-deps --only-binary=:all: --python-version "$v" \
            --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
            --platform manylinux_2_17_x86_64 -d .gpu/wheels duckdb==2.0.1
    done
    du -sh .gpu
    exit 0
fi

minutes=${1:?usage: gpu_session.sh MINUTES [DEVICE] | --prepare}
device=${2:-cuda:0}
out=${OUT:-out/gpu}
mkdir -p "$out"
start=$(date +%s)
py=python3
{
    date -u
    nvidia-smi -L 2>&1 || echo "no nvidia-smi"
    $py -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
} > "$out/gpu.txt" 2>&1

# what the machine lacks, from the carried wheels (into a fresh folder: a reused host keeps
# an older copy), then the checkout's source first on the path
site=/tmp/recaudit-site
rm -rf "$site"
tag=$($py -c "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')")
for pkg in duckdb pyarrow; do
    if ! $py -c "import $pkg" 2>/dev/null; then
        wheel=$(ls .gpu/wheels/"$pkg"-*-"$tag"-*.whl .gpu/wheels/"$pkg"-*-cp312-abi3-*.whl 2>/dev/null | head -1)
        if [ -n "$wheel" ]; then
            $py -m pip install -q --no-deps --target "$site" "$wheel" >> "$out/gpu.txt" 2>&1 \
                && echo "installed $(basename "$wheel")" >> "$out/gpu.txt"
        else
            echo "missing $pkg and no wheel for $tag in .gpu/wheels" >> "$out/gpu.txt"
        fi
    fi
done
export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}"
export RECAUDIT_MIRROR="$PWD/.gpu/data${RECAUDIT_MIRROR:+:$RECAUDIT_MIRROR}"
export RECAUDIT_DATA=/tmp/recaudit-data

for model in sasrec gru4rec; do
    job="{\"dataset\": \"ml-100k\", \"min_user_interactions\": 10, \"ratio\": 0.9,
          \"model\": \"$model@betello2023\", \"params\": {}, \"epochs\": 2, \"threads\": 1,
          \"device\": \"$device\"}"
    timeout 150 $py benchmarks/_epoch_worker.py "$job" > "$out/betello-$model.json" \
        2> "$out/betello-$model.err"
    echo "betello $model: rc $? $(cat "$out/betello-$model.json")" >> "$out/gpu.txt"
done

left=$(( minutes * 60 - ($(date +%s) - start) ))
if [ "$left" -lt 90 ]; then
    echo "no time left for the queue ($left s)" >> "$out/gpu.txt"
    exit 0
fi
$py -m recaudit reproduce queue --minutes "$(( left / 60 ))" --dir "$out/gpu-queue" \
    --device "$device" --stack 16 > "$out/queue.txt" 2>&1
echo "queue: rc $?" >> "$out/gpu.txt"
du -sh "$out"/* >> "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"; tail -n 20 "$out/queue.txt"
