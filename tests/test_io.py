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
