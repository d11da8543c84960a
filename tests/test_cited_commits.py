"""Every commit of another repository that the code and documents cite is in ``docs/cited-commits.md``
with a branch or tag of its repository that contains it; with ``AIAYN_MIRRORS`` (a folder of clones,
``owner+name/repo``), each row is checked again against the clone's history."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from paths import ROOT

LIST = ROOT / "docs" / "cited-commits.md"
ROW = re.compile(r"^\| (?P<repo>[\w.-]+/[\w.-]+) \| (?P<commit>[0-9a-f]{40}) \| (?P<refs>[^|]+) \|", re.M)
# a commit: 8 to 40 hex digits with a letter among them, or all digits after "at " (sentencepiece's 27344904)
CITED = re.compile(r"(?<![\w.])(?:[0-9a-f]*[a-f][0-9a-f]*|(?<=at )[0-9]+)(?![\w.])")
# hex that is not a commit: checksums
NOT_COMMITS = {"a8cd784e006feb32ac6f3d9ec7eb389a"}  # md5 of WMT14's test-full.tgz (tests/test_download.py)
TEXT = (".md", ".py", ".yaml", ".yml", ".smk", ".toml", ".sh", ".cfg", ".txt")


def rows() -> list[dict]:
    return [m.groupdict() for m in ROW.finditer(LIST.read_text(encoding="utf-8"))]


def citations() -> dict[str, str]:
    """``{token: first file citing it}`` over the tracked text files, this list excluded."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found: dict[str, str] = {}
    for name in files:
        if name == "docs/cited-commits.md" or not (name.endswith(TEXT) or name == "Snakefile"):
            continue
        for token in CITED.findall((ROOT / name).read_text(encoding="utf-8")):
            if 8 <= len(token) <= 40 and token not in NOT_COMMITS:
                found.setdefault(token, name)
    return found


def test_every_cited_commit_is_listed_with_a_ref_that_contains_it():
    listed = rows()
    assert len(listed) >= 20 and all(r["refs"].strip() for r in listed)
    unlisted = {
        token: where for token, where in citations().items() if not any(r["commit"].startswith(token) for r in listed)
    }
    assert not unlisted, f"cited but not in docs/cited-commits.md: {unlisted}"


def test_every_listed_commit_is_cited():
    cited = citations()
    stale = [r["commit"] for r in rows() if not any(r["commit"].startswith(token) for token in cited)]
    assert not stale, f"listed but cited nowhere: {stale}"


@pytest.mark.skipif(not os.environ.get("AIAYN_MIRRORS"), reason="AIAYN_MIRRORS: no clones of the cited repositories")
def test_each_listed_ref_contains_its_commit_in_that_repositorys_own_history():
    checked = 0
    for row in rows():
        clone = Path(os.environ["AIAYN_MIRRORS"]) / row["repo"].replace("/", "+") / "repo"
        git_dir = clone / ".git" if (clone / ".git").is_dir() else clone
        if not git_dir.is_dir():
            continue
        refs = re.findall(r"(branch|tag) ([\w./-]+)", row["refs"]) + [
            ("branch", b) for b in re.findall(r"^(master|main)\b", row["refs"])
        ]
        assert refs, row
        for kind, name in refs:
            args = ["branch", "-a", "--contains"] if kind == "branch" else ["tag", "--contains"]
            out = subprocess.run(
                ["git", "--git-dir", str(git_dir), *args, row["commit"]], capture_output=True, text=True, check=True
            ).stdout
            assert name in [line.strip("* ").strip() for line in out.splitlines()], (row["repo"], row["commit"], name)
            checked += 1
    assert checked
