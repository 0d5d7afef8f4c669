#!/bin/sh
# deploy/Dockerfile's build stage: trisque's wheel with the core compiled by
# mypyc (setup.py), or, when it cannot be compiled, the interpreted core,
# saying why. Two steps, so that the tools' layer is kept across code changes:
#
#   build-core.sh tools   a C compiler and Python's headers if the image
#                         lacks them and apt-get can fetch them; a venv
#                         (/opt/build) with the build requirements of
#                         /src/pyproject.toml (setuptools, mypy)
#   build-core.sh wheel   /dist/trisque-*.whl from /src
#
# What they say about the core goes to the build's output and to
# /dist/build-core.txt, which the image keeps (/src/dist/build-core.txt).
#
# Environment: PIP_ARGS (where pip finds packages), CORE: auto (compiled if
# it can be, else interpreted), compiled (fail rather than fall back) or
# interpreted (TRISQUE_PURE=1: no compiler needed).
set -eu
CORE=${CORE:-auto}
PIP_ARGS=${PIP_ARGS:-}
PIP="/opt/build/bin/pip --no-cache-dir --disable-pip-version-check"
REPORT=/dist/build-core.txt

say() {
    mkdir -p /dist
    echo "trisque image: $*" | tee -a "$REPORT" >&2
}

has_headers() {
    python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}

compiler_packages() {
    # gcc with the C library's headers; Python's headers only where python3
    # is Debian's (python:3.11-slim has them under /usr/local/include)
    command -v gcc >/dev/null || printf 'gcc libc6-dev '
    has_headers || printf 'python3-dev'
}

tools() {
    case "$CORE" in auto | compiled | interpreted) ;;
        *) say "CORE must be auto, compiled or interpreted, not '$CORE'"; exit 2 ;;
    esac
    missing=$(compiler_packages)
    if [ "$CORE" != interpreted ] && [ -n "$missing" ]; then
        if command -v apt-get >/dev/null \
            && apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                   --no-install-recommends $missing >/dev/null; then
            rm -rf /var/lib/apt/lists/*
        else
            # (no apt-get, or no network: setup.py falls back and says so)
            say "could not install $missing for compiling the core"
        fi
    fi
    python3 -m venv /opt/build
    python3 -c 'import tomllib; print(*tomllib.load(open("/src/pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
        | grep -v '^mypy' > /src/build-requirements.txt || true
    # wheel: pip wheel --no-build-isolation needs it beside setuptools
    $PIP install -q $PIP_ARGS -r /src/build-requirements.txt wheel
    if [ "$CORE" != interpreted ]; then
        # mypy is the compiler (mypyc): without it setup.py installs the
        # interpreted core, which is no reason to stop the build here
        mypy=$(python3 -c 'import tomllib; print(*[r for r in tomllib.load(open("/src/pyproject.toml", "rb"))["build-system"]["requires"] if r.startswith("mypy")])')
        $PIP install -q $PIP_ARGS "$mypy" \
            || say "could not install $mypy for compiling the core"
    fi
}

wheel() {
    [ "$CORE" != interpreted ] || export TRISQUE_PURE=1
    # -v: setup.py's line saying why it did not compile is in the log
    if ! $PIP wheel -v --no-deps --no-build-isolation --wheel-dir /dist /src \
            >/tmp/build-core.log 2>&1; then
        tail -n 60 /tmp/build-core.log >&2
        say "building trisque's wheel failed (above)"
        exit 1
    fi
    built=$(ls /dist/trisque-*.whl)
    case "$built" in
        *-none-any.whl)
            reason=$(sed -n 's/.*trisque: installing the interpreted core //p' /tmp/build-core.log | tail -n 1)
            say "WARNING: the core is INTERPRETED ${reason:-(no reason in the log)}, slower than compiled (bench/README.md)"
            if [ "$CORE" = compiled ]; then
                grep -i -E 'error|trisque:' /tmp/build-core.log | tail -n 30 >&2 || true
                say "CORE=compiled asked for a compiled core"
                exit 1
            fi ;;
        *) say "core compiled (mypyc): ${built#/dist/}" ;;
    esac
}

"$@"
