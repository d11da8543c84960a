#!/usr/bin/env bash
# Wheels of benchmarks/gpu/demo-wheels.txt into .whl/ for the device machine's Python 3.12 (plan 3 of
# benchmarks/gpu/README.md), here, where the package registries are reached: a binary wheel for
# CPython 3.12 on manylinux x86-64 where one is published, else a wheel built from the source
# distribution (the packages published so are pure Python). Run from the checkout's root.
set -euo pipefail
mkdir -p .whl
platforms=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)
grep -v '^#' benchmarks/gpu/demo-wheels.txt | while read -r requirement; do
    [ -n "$requirement" ] || continue
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        "${platforms[@]/#/--platform=}" -d .whl "$requirement" 2>/dev/null \
        || python -m pip wheel -q --no-deps -w .whl "$requirement"
done
ls .whl | wc -l
