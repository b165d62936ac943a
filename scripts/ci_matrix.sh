#!/usr/bin/env bash
# The supported versions beyond `make test`'s one (Python 3.11 with the torch of constraints.txt), each in a
# fresh virtualenv outside the checkout. Legs:
#   py312, py313   the core install with [configs] and the test tools, no torch and no notebook stack: the whole
#                  suite, each test that needs an absent extra skipped with the reason (tests/conftest.py)
#   torch-newest   Python 3.11, torch $TORCH_NEWEST (the newest release [trial] admits) with [trial,configs]:
#                  the trial, trace, Hugging Face and checkpoint tests ($TORCH_TESTS)
#   torch-oldest   Python 3.12, torch $TORCH_OLDEST ([trial]'s floor) with [trial,configs]: the same tests. Not a
#                  default leg: the floor is `make test`'s own pin (constraints.txt) on Python 3.11, and PyPI has
#                  only the CUDA build for 3.12 (about 3 GB with its nvidia-* libs). CI_LEGS=torch-oldest runs it.
# Usage: scripts/ci_matrix.sh [all|install|test]
#   all (default)  install every leg, then test it; installs overlap (disk and network bound)
#   install        only the installs, into $CI_MATRIX_WORK (kept); .ci/run starts this beside `make test`
#   test           only the tests, of the legs installed in $CI_MATRIX_WORK
# At most $CPU_SLOTS (default: the CPU count) test runs share the CPU at once. Prints each leg's install and
# test seconds; exits non-zero when any leg failed, with the end of its log.
# Environment: CI_LEGS (default: py312 py313 torch-newest, space-separated), PY311/PY312/PY313 (interpreters), CI_MATRIX_WORK
# (the work folder; default a new temporary one), KEEP=1 keeps it, PIP_ARGS (extra pip arguments).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# tests/test_environment.py checks that these are the two ends of pyproject.toml's [trial] torch range
TORCH_NEWEST=2.14.1
TORCH_OLDEST=2.13.0
TORCH_TESTS="tests/test_trial.py tests/test_trace.py tests/test_hf.py tests/test_checkpoint_check.py"
TEST_TOOLS=(pytest pytest-timeout hypothesis packaging setuptools)  # setuptools: tests/test_install.py builds the wheel

MODE="${1:-all}"
case "$MODE" in all|install|test) ;; *) echo "usage: $0 [all|install|test]" >&2; exit 2 ;; esac

# an interpreter that can make a virtualenv: on PATH, else pyenv's own copy (its shim may refuse a version
# that is not selected)
pick() {
    local name="$1" found
    for found in "$(command -v "$name" 2>/dev/null || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"${name#python}".*/bin/"$name"; do
        if [ -n "$found" ] && [ -x "$found" ] && "$found" -c 'import venv' >/dev/null 2>&1; then
            echo "$found"; return 0
        fi
    done
    return 1
}
PY311="${PY311:-$(pick python3.11 || true)}"
PY312="${PY312:-$(pick python3.12 || true)}"
PY313="${PY313:-$(pick python3.13 || true)}"

LEGS="${CI_LEGS:-py312 py313 torch-newest}"
for name in $LEGS; do
    case "$name" in py312|py313|torch-newest|torch-oldest) ;;
        *) echo "ci-matrix: unknown leg $name (known: py312 py313 torch-newest torch-oldest)" >&2; exit 2 ;;
    esac
done
if [ -n "${CI_MATRIX_WORK:-}" ]; then WORK="$CI_MATRIX_WORK"; mkdir -p "$WORK"
else WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpuwork-matrix.XXXXXX")"; fi
cleanup() {
    if [ "$MODE" = install ] || [ "${KEEP:-0}" = 1 ]; then echo "ci-matrix: work folder kept: $WORK"
    else rm -rf "$WORK"; fi
}
trap cleanup EXIT

now() { date +%s; }
start=$(now)
say() { echo "ci-matrix: [$(( $(now) - start )) s] $*"; }

# the interpreter, torch and extras of a leg
python_of() { case "$1" in py312|torch-oldest) echo "$PY312" ;; py313) echo "$PY313" ;; *) echo "$PY311" ;; esac; }
torch_of() { case "$1" in torch-newest) echo "$TORCH_NEWEST" ;; torch-oldest) echo "$TORCH_OLDEST" ;; *) echo "" ;; esac; }
extras_of() { case "$1" in torch-*) echo "trial,configs" ;; *) echo "configs" ;; esac; }
tests_of() { case "$1" in torch-*) echo "$TORCH_TESTS" ;; *) echo "tests" ;; esac; }

# install LEG: a virtualenv with the leg's torch first (pinned, alone: left to the resolver beside the rest, pip
# may pick another build), then this checkout, editable, with the leg's extras and the test tools (under a lock:
# pip writes the package's metadata into the checkout). $WORK/LEG.install.{log,s}; LEG.status says "install"
# when a step failed.
install() {
    local leg="$1" python torch extras venv="$WORK/$1" t0 status=0
    python="$(python_of "$leg")"; torch="$(torch_of "$leg")"; extras="$(extras_of "$leg")"
    say "$leg: installing (python ${python:-missing}, torch ${torch:-none}, [$extras])"
    t0=$(now)
    rm -rf "$venv" "$WORK/$leg.status"
    # a chain of && (errexit does not apply inside a function called from a condition)
    {
        [ -n "$python" ] && "$python" -m venv "$venv" &&
        { [ -z "$torch" ] || "$venv/bin/python" -m pip install ${PIP_ARGS:-} "torch==$torch"; } &&
        flock "$WORK/editable.lock" \
            "$venv/bin/python" -m pip install ${PIP_ARGS:-} -e ".[$extras]" "${TEST_TOOLS[@]}" &&
        "$venv/bin/python" -c 'import sys; print("installed: python", sys.version.split()[0])' &&
        { [ -z "$torch" ] || "$venv/bin/python" -c 'import torch; print("installed: torch", torch.__version__)'; }
    } >"$WORK/$leg.install.log" 2>&1 || status=$?
    echo $(( $(now) - t0 )) >"$WORK/$leg.install.s"
    if [ "$status" != 0 ]; then
        echo install >"$WORK/$leg.status"
        say "$leg: install FAILED after $(cat "$WORK/$leg.install.s") s"
    else
        say "$leg: installed in $(cat "$WORK/$leg.install.s") s ($(grep '^installed: ' "$WORK/$leg.install.log" |
            cut -d' ' -f2- | paste -sd, -))"
    fi
    return "$status"
}

# tests LEG: pytest in LEG's virtualenv, from the checkout, once one of $CPU_SLOTS slots is free (a slot is a
# lock file; flock -E 200 tells a busy slot from pytest's own status). $WORK/LEG.test.{log,s}: seconds of
# testing, not of waiting for a slot; LEG.status: ok or tests.
tests() {
    local leg="$1" i status t0
    [ ! -f "$WORK/$leg.status" ] || return 1  # its install failed
    [ -x "$WORK/$leg/bin/python" ] || { echo install >"$WORK/$leg.status"; return 1; }  # never installed
    while :; do
        for i in $(seq "$CPU_SLOTS"); do
            status=0
            t0=$(now)
            # shellcheck disable=SC2046 # tests_of is a list of paths
            flock -n -E 200 "$WORK/cpu.$i.lock" "$WORK/$leg/bin/python" -m pytest -q -p no:cacheprovider \
                $(tests_of "$leg") >"$WORK/$leg.test.log" 2>&1 || status=$?
            if [ "$status" != 200 ]; then
                echo $(( $(now) - t0 )) >"$WORK/$leg.test.s"
                if [ "$status" = 0 ]; then echo ok >"$WORK/$leg.status"; else echo tests >"$WORK/$leg.status"; fi
                say "$leg: tests $([ "$status" = 0 ] && echo passed || echo FAILED) in" \
                    "$(cat "$WORK/$leg.test.s") s: $(tail -n 1 "$WORK/$leg.test.log")"
                return "$status"
            fi
        done
        sleep 2
    done
}

CPU_SLOTS="${CPU_SLOTS:-$(nproc)}"
say "$MODE: legs $LEGS; $CPU_SLOTS test runs at once; work folder $WORK"
pids=()
for name in $LEGS; do
    case "$MODE" in
        install) install "$name" & ;;
        test) tests "$name" & ;;
        all) { install "$name" && tests "$name"; } & ;;
    esac
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
[ "$MODE" != install ] || { say "installs done"; exit 0; }

failed=0
echo "ci-matrix: leg            install s  tests s  outcome"
for name in $LEGS; do
    outcome="$(cat "$WORK/$name.status" 2>/dev/null || echo "not installed")"
    printf 'ci-matrix: %-14s %9s %8s  %s\n' "$name" "$(cat "$WORK/$name.install.s" 2>/dev/null || echo -)" \
        "$(cat "$WORK/$name.test.s" 2>/dev/null || echo -)" "$outcome"
    if [ "$outcome" != ok ]; then
        failed=1
        log="$WORK/$name.test.log"; [ "$outcome" = tests ] || log="$WORK/$name.install.log"
        echo "ci-matrix: $name FAILED ($outcome); the end of $log:" >&2
        tail -n 40 "$log" >&2 2>/dev/null || true
    fi
done
say "total $(( $(now) - start )) s"
exit "$failed"
