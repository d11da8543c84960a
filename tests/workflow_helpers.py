"""Running the workflow from tests, and what a directory holds (to show that a command changed nothing)."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from paths import ROOT

# Not the working tree: git's, the environment's and Snakemake's own bookkeeping (a dry run keeps an IO cache
# in .snakemake/iocache), and caches Python and pytest write.
NOT_THE_TREE = {".git", ".venv", ".snakemake", "__pycache__", ".pytest_cache"}


def snakemake(workdir, *args, check=True):
    """``python -m snakemake`` on the project's Snakefile in ``workdir``; fails with its output unless ``check``."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]
    result = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root`` (but :data:`NOT_THE_TREE`): modification time in ns, size, and the sha256 of
    files up to 1 MiB (a larger one cannot change without its time changing)."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in NOT_THE_TREE]
        for name in names:
            path = Path(folder) / name
            stat = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.st_size <= 1 << 20 else ""
            files[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size, digest)
    return files
