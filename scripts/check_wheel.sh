#!/usr/bin/env bash
# Build gpuwork's wheel and prove that it works installed, away from the checkout (CI runs this after
# `make test`; `make check-wheel` runs it by hand):
#   1. a fresh virtualenv gets torch==2.13.0 first (constraints.txt), then the wheel with [all]; from a
#      temporary directory every verb runs: --version, models, estimate, plan, offers, request, trace, trial,
#      report, and app (served on a free 127.0.0.1 port, fetched, stopped by its PID);
#   2. a second fresh virtualenv gets the wheel alone (the core, no torch): models, estimate, offers and
#      request give the same answers, and `gpuwork app` says which extra to install.
# Each step prints what it checks; the first failure exits non-zero.
# Environment: PYTHON (default python3.11) makes the virtualenvs; KEEP=1 keeps the work folder.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpuwork-wheel.XXXXXX")"
APP_PID=""
start=$(date +%s)

cleanup() {
    if [ -n "$APP_PID" ] && kill -0 "$APP_PID" 2>/dev/null; then kill -TERM "$APP_PID" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then echo "check-wheel: work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

step() { echo "check-wheel: [$(( $(date +%s) - start )) s] $*"; }
fail() { echo "check-wheel: FAILED: $*" >&2; exit 1; }

# run NAME CMD...: run from $RUN (outside the checkout), output in $WORK/NAME.log; fail with its tail on error
run() {
    local name="$1"; shift
    if ! (cd "$RUN" && "$@") >"$WORK/$name.log" 2>&1; then
        tail -n 30 "$WORK/$name.log" >&2
        fail "$name: \`$*\` exited non-zero (log above)"
    fi
}
# expect NAME TEXT: the log of NAME holds TEXT (a fixed string)
expect() {
    grep -qF -- "$2" "$WORK/$1.log" || { tail -n 30 "$WORK/$1.log" >&2; fail "$1: output lacks '$2'"; }
    echo "  ok: $1 prints '$2'"
}

command -v "$PYTHON" >/dev/null 2>&1 || fail "$PYTHON is not on PATH (set PYTHON=...)"
TORCH_PIN="$(grep -E '^torch==' "$ROOT/constraints.txt")" || fail "constraints.txt has no torch== pin"
VERSION="$("$PYTHON" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
    "$ROOT/pyproject.toml")"
RUN="$WORK/run"  # the working directory of every check: no checkout, no data/ or notebooks/ next to it
mkdir -p "$RUN"

step "copy the source tree (no .venv, build/ or egg-info) and build the wheel"
mkdir -p "$WORK/src" "$WORK/dist"
tar -C "$ROOT" -cf - --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist --exclude='*.egg-info' \
    --exclude=__pycache__ --exclude=.pytest_cache --exclude=.ruff_cache --exclude=./out --exclude=./reports \
    --exclude=./runs --exclude=./.gl . | tar -C "$WORK/src" -xf -
"$PYTHON" -m venv "$WORK/full"
FULL="$WORK/full/bin"
run build "$FULL/python" -m pip wheel --no-deps -w "$WORK/dist" "$WORK/src"
WHEEL="$(ls "$WORK"/dist/gpuwork-*.whl)"
echo "  ok: built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"

step "the wheel holds the bundled data, the notebooks and the license"
"$FULL/python" - "$WHEEL" "$ROOT" <<'PY' || fail "the wheel lacks files (listed above)"
import sys, zipfile
from pathlib import Path
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
pkg = Path(sys.argv[2]) / "gpuwork"
want = {f"gpuwork/{p.relative_to(pkg).as_posix()}" for p in (pkg / "facts" / "data").rglob("*") if p.is_file()}
want |= {f"gpuwork/ui/notebooks/{p.name}" for p in (pkg / "ui" / "notebooks").glob("*.ipynb")}
missing = sorted(want - names)
licenses = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
for name in missing:
    print(f"  missing: {name}", file=sys.stderr)
if not licenses:
    print("  missing: LICENSE in .dist-info/licenses", file=sys.stderr)
if missing or not licenses:
    sys.exit(1)
print(f"  ok: all {len(want)} data and notebook files, and {licenses[0]}")
PY

step "fresh virtualenv: $TORCH_PIN first, then the wheel with [all]"
run install-torch "$FULL/python" -m pip install -c "$ROOT/constraints.txt" "$TORCH_PIN"
run install-all "$FULL/python" -m pip install -c "$ROOT/constraints.txt" "$WHEEL[all]"
run torch-version "$FULL/python" -c "import torch; print('torch', torch.__version__)"
expect torch-version "torch ${TORCH_PIN#torch==}"
run where "$FULL/python" -c "import gpuwork; print(gpuwork.__file__)"
expect where "$WORK/full/lib/"

step "gpuwork --version"
run version "$FULL/gpuwork" --version
expect version "gpuwork $VERSION"

step "gpuwork models: the bundled presets with exact parameter counts"
run models "$FULL/gpuwork" models
grep -E '^llama-3\.1-8b .* 8,030,261,248 ' "$WORK/models.log" >/dev/null \
    || { cat "$WORK/models.log" >&2; fail "models: no llama-3.1-8b row with 8,030,261,248 parameters"; }
echo "  ok: models lists llama-3.1-8b with 8,030,261,248 parameters"

step "gpuwork estimate / plan / offers / request"
run estimate "$FULL/gpuwork" estimate --model llama-3.1-8b --method lora
expect estimate "parameters: 8,"
expect estimate "device total"
run plan "$FULL/gpuwork" plan --model llama-3.1-8b --method lora --seq-len 4096 --dataset-tokens 1B
expect plan "memory per GPU"
run offers "$FULL/gpuwork" offers --model llama-3.1-8b --method full --mode reserved --sort cost
expect offers "sorted by cost"
run request "$FULL/gpuwork" request --model llama-3.1-8b --method lora --dataset-bytes 200GB --rent-days 30 --lang ru
expect request "Дообучение"

step "gpuwork trace (exact mode: one step under fake tensors)"
run trace "$FULL/gpuwork" trace --model tiny-llama --method lora --seq-len 256
expect trace "traced peak allocated"

step "gpuwork trial (a real fine-tune of tiny-llama on this CPU, record written)"
run trial "$FULL/gpuwork" trial --model tiny-llama --method lora --seq-len 256 --steps 2 --warmup 1 --out "$WORK/runs"
expect trial "fits         yes"
ls "$WORK"/runs/trial-tiny-llama-lora-*.json >/dev/null 2>&1 || fail "trial: no record JSON in $WORK/runs"
echo "  ok: trial record $(basename "$(ls "$WORK"/runs/trial-*.json | head -n 1)")"

step "gpuwork report --notebooks 01_sizing (the bundled notebook executed, exported as HTML)"
run report "$FULL/gpuwork" report --notebooks 01_sizing --out "$WORK/report" --no-progress
ls "$WORK"/report/*.html >/dev/null 2>&1 || fail "report: no HTML page in $WORK/report"
echo "  ok: report wrote $(cd "$WORK/report" && ls ./*.html | tr '\n' ' ')"

step "gpuwork app: served on a free 127.0.0.1 port, fetched, stopped by its PID"
PORT="$("$FULL/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
(cd "$RUN" && exec setsid "$FULL/gpuwork" app --port "$PORT" >"$WORK/app.log" 2>&1 </dev/null) &
APP_PID=$!
URL="http://127.0.0.1:$PORT/"
"$FULL/python" - "$URL" "$APP_PID" <<'PY' || { tail -n 30 "$WORK/app.log" >&2; fail "app: $URL did not answer 200"; }
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 120
while True:
    try:  # the first GET starts a kernel and runs the notebook: allow it time
        with urllib.request.urlopen(url, timeout=120) as response:
            body = response.read().decode()
            if response.status == 200 and "<title>gpuwork" in body:
                print(f"  ok: GET {url} -> 200, {len(body):,} characters of page")
                break
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"gpuwork app (pid {pid}) exited")
    if time.monotonic() > deadline:
        sys.exit("no answer within 120 s")
    time.sleep(0.5)
# the charts' plotly.js comes from the installed package, beside its app notebook
try:
    with urllib.request.urlopen(url + "voila/files/static/plotly-basic.min.js", timeout=60) as js:
        print(f"  ok: the charts' plotly.js bundle -> {js.status}, {len(js.read()):,} bytes")
except OSError as exc:
    sys.exit(f"the charts' plotly.js bundle is not served: {exc}")
PY
if grep -q "Error at server while executing cell" "$WORK/app.log"; then
    grep -m1 -A3 "Error at server while executing cell" "$WORK/app.log" | cut -c1-400 >&2
    fail "app: the notebook raised while Voila ran it (log: $WORK/app.log with KEEP=1)"
fi
echo "  ok: the app notebook ran without an error"
kill -TERM "$APP_PID"
for _ in $(seq 30); do kill -0 "$APP_PID" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$APP_PID" 2>/dev/null; then kill -KILL "$APP_PID"; fail "app: pid $APP_PID ignored SIGTERM for 15 s"; fi
wait "$APP_PID" 2>/dev/null || true
APP_PID=""
expect app "Kernel shutdown"

step "core only: a second fresh virtualenv with the wheel and no extras (no torch)"
"$PYTHON" -m venv "$WORK/core"
CORE="$WORK/core/bin"
run core-install "$CORE/python" -m pip install "$WHEEL"
run core-notorch "$CORE/python" -c \
    "import importlib.util as u; import gpuwork; print('torch found' if u.find_spec('torch') else 'no torch')"
expect core-notorch "no torch"
run core-models "$CORE/gpuwork" models
grep -E '^llama-3\.1-8b .* 8,030,261,248 ' "$WORK/core-models.log" >/dev/null \
    || { cat "$WORK/core-models.log" >&2; fail "core models: no llama-3.1-8b row with 8,030,261,248 parameters"; }
echo "  ok: core models lists llama-3.1-8b with 8,030,261,248 parameters"
# the core must answer exactly as the full install does
run core-estimate "$CORE/gpuwork" estimate --model llama-3.1-8b --method lora
cmp -s "$WORK/estimate.log" "$WORK/core-estimate.log" || fail "core estimate differs from the full install's"
echo "  ok: core estimate equals the full install's"
run core-offers "$CORE/gpuwork" offers --model llama-3.1-8b --method full --mode reserved --sort cost
cmp -s "$WORK/offers.log" "$WORK/core-offers.log" || fail "core offers differ from the full install's"
echo "  ok: core offers equal the full install's"
run core-request "$CORE/gpuwork" request --model llama-3.1-8b --method lora --dataset-bytes 200GB --rent-days 30 \
    --lang ru
cmp -s "$WORK/request.log" "$WORK/core-request.log" || fail "core request differs from the full install's"
echo "  ok: core request equals the full install's"
status=0
(cd "$RUN" && "$CORE/gpuwork" app --port "$PORT") >"$WORK/core-app.log" 2>&1 || status=$?
[ "$status" = 2 ] || { cat "$WORK/core-app.log" >&2; fail "core app: exit status $status, expected 2"; }
expect core-app "install gpuwork[app]"
[ "$(wc -l <"$WORK/core-app.log")" = 1 ] || { cat "$WORK/core-app.log" >&2; fail "core app: more than one line"; }
status=0
(cd "$RUN" && "$CORE/gpuwork" trial --model tiny-llama --steps 1) >"$WORK/core-trial.log" 2>&1 || status=$?
[ "$status" = 2 ] || { cat "$WORK/core-trial.log" >&2; fail "core trial: exit status $status, expected 2"; }
expect core-trial "pip install 'gpuwork[trial]'"
[ "$(wc -l <"$WORK/core-trial.log")" = 1 ] || { cat "$WORK/core-trial.log" >&2; fail "core trial: more than one line"; }

step "all checks passed in $(( $(date +%s) - start )) s"
