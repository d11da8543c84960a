import os
import re
import stat
import subprocess
import sys

import pytest

from aiayn.io import atomic_output, atomic_path, read_json, write_json


def test_atomic_output_publishes_only_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with pytest.raises(RuntimeError, match="^killed$"):
        with atomic_output(target) as handle:
            handle.write("half")
            raise RuntimeError("killed")
    assert not target.exists() and not list(target.parent.iterdir())
    with atomic_output(target) as handle:
        handle.write("whole\n")
    assert target.read_text() == "whole\n"


def test_outputs_get_umask_permissions_not_private(tmp_path):
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        with atomic_path(tmp_path / "b.bin") as tmp:
            tmp.write_bytes(b"1")
    finally:
        os.umask(old)
    for name in ("a.json", "b.bin"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644
    assert read_json(tmp_path / "a.json") == {"x": 1}


def run_cli(module, *args, env=None):
    """``python -m module args`` in a subprocess (how Snakemake runs a stage)."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "AIAYN_DEBUG": "", **(env or {})})


def test_uncaught_errors_reach_the_log_file(tmp_path):
    log = tmp_path / "run.log"
    code = ("from aiayn.io import setup_logging; setup_logging(%r); "
            "raise ValueError('data/x.txt line 3: bad token')" % str(log))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert "error: data/x.txt line 3: bad token" in log.read_text()
    assert "bad token" in result.stderr


def test_progress_log_says_how_far_at_most_every_interval(caplog):
    import logging

    from aiayn.io import ProgressLog

    now = [0.0]
    logger = logging.getLogger("aiayn.test.progress")
    every = ProgressLog(logger, 1000, "beam search, sentences", every_seconds=30, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="aiayn.test.progress"):
        for _ in range(9):        # 100 sentences every 10 s: a line at 30 s, 60 s, 90 s
            now[0] += 10
            every(100)
        now[0] += 1
        every(100)                # the last batch always logs
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["beam search, sentences: 300/1000 (30%), 10.0/s, ETA 0:01:10",
                     "beam search, sentences: 600/1000 (60%), 10.0/s, ETA 0:00:40",
                     "beam search, sentences: 900/1000 (90%), 10.0/s, ETA 0:00:10",
                     "beam search, sentences: 1000/1000 (100%), 11.0/s, ETA 0:00:00"]


def corpora(tmp_path, src: bytes, tgt: bytes):
    (tmp_path / "c.en").write_bytes(src)
    (tmp_path / "c.de").write_bytes(tgt)
    return ["--src-lang", "en", "--tgt-lang", "de", "--corpora", tmp_path / "c", "--out-prefix",
            tmp_path / "out/train", "--stats", tmp_path / "out/stats.json", "--log", tmp_path / "clean.log"]


@pytest.mark.parametrize("src, tgt, expected", [
    (b"a b\nc d\n", b"x y\n", r"c\.en: 2 lines, .*c\.de: 1 lines\): line i of each"),
    (b"a b\nc \xff d\n", b"x y\nz w\n", r"c\.en: line 2: .*invalid UTF-8 \(re-encode"),
])
def test_bad_input_ends_a_stage_with_one_line_and_status_1(tmp_path, src, tgt, expected):
    """A data error: exit status 1 and one line in the rule's log naming file and line, no traceback."""
    args = corpora(tmp_path, src, tgt)
    result = run_cli("aiayn.data.clean", *args)
    assert result.returncode == 1
    log = (tmp_path / "clean.log").read_text().splitlines()
    errors = [line for line in log if "CRITICAL" in line]
    assert len(errors) == 1 and re.search(expected, errors[0]), log
    assert "AIAYN_DEBUG=1 shows the traceback" in errors[0]
    assert "Traceback" not in result.stderr and "Traceback" not in "\n".join(log)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    debug = run_cli("aiayn.data.clean", *args, env={"AIAYN_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert debug.stderr.index("error: ") < debug.stderr.index("Traceback")


def test_a_bug_keeps_its_traceback_after_the_line(tmp_path):
    code = "from aiayn.io import setup_logging; setup_logging(); raise TypeError('unexpected')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "AIAYN_DEBUG": ""})
    assert result.returncode == 1
    assert result.stderr.index("internal error, TypeError: unexpected") < result.stderr.index("Traceback")


def test_a_full_disk_says_what_to_do(tmp_path):
    code = ("import errno; from aiayn.io import setup_logging; setup_logging(); "
            "raise OSError(errno.ENOSPC, 'No space left on device', 'results/x.pt')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "AIAYN_DEBUG": ""})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no space left on the device writing results/x.pt" in result.stderr
    assert "run the same command again" in result.stderr
