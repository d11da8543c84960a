import os
import stat

import pytest

from aiayn.io import atomic_output, atomic_path, read_json, write_json


def test_atomic_output_publishes_only_on_success(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with pytest.raises(RuntimeError):
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


def test_uncaught_errors_reach_the_log_file(tmp_path):
    import subprocess
    import sys
    log = tmp_path / "run.log"
    code = ("from aiayn.io import setup_logging; setup_logging(%r); "
            "raise ValueError('data/x.txt line 3: bad token')" % str(log))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert "ValueError: data/x.txt line 3: bad token" in log.read_text()
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
