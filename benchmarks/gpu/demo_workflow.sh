#!/usr/bin/env bash
# Plan 3 of benchmarks/gpu/README.md: the embedded demo through profiles/workstation on a lent GPU,
# with configs/demo-gpu.yaml (every run trains and decodes on the GPU). Run from the checkout's root
# on the device machine, with the wheels of .whl/ (snakemake, sacremoses and what they need that the
# machine lacks: the README says how to fetch them). Writes into $OUT: snakemake.log (the whole run),
# demo-gpu.tar.gz (the tables, every job's log, the trainings' summary.json and log.csv, the jobs'
# benchmark records, Snakemake's own log) and timing.txt (wall seconds, the GPU, the exit status).
set -uo pipefail
out=${OUT:?run this where the device tool sets OUT}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bin && ln -sf "$(command -v python3)" /tmp/bin/python  # the rules call `python`
export PATH=/tmp/bin:/tmp/site/bin:$PATH PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/timing.txt"
python3 -c 'import torch, snakemake; print("torch", torch.__version__, "snakemake", snakemake.__version__)' >> "$out/timing.txt"
began=$(date +%s)
python3 -m snakemake --profile profiles/workstation --configfile configs/demo.yaml configs/demo-gpu.yaml \
    > "$out/snakemake.log" 2>&1
status=$?
echo "snakemake exit $status after $(( $(date +%s) - began )) s" >> "$out/timing.txt"
find results/demo data/demo/benchmarks .snakemake/log \( -path '*/tables/*' -o -name '*.log' \
    -o -name summary.json -o -name log.csv -o -path '*/benchmarks/*' \) -type f 2>/dev/null \
    | tar czf "$out/demo-gpu.tar.gz" -T -
cat "$out/timing.txt"; tail -30 "$out/snakemake.log"
exit $status
