import importlib
import os
import re
import stat
import subprocess
import sys

import pytest

from aiayn.io import INPUT_ERRORS, atomic_output, atomic_path, read_json, write_json


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
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "AIAYN_DEBUG": "", **(env or {})},
    )


def test_uncaught_errors_reach_the_log_file(tmp_path):
    log = tmp_path / "run.log"
    code = (
        "from aiayn.io import setup_logging; setup_logging(%r); "
        "raise ValueError('data/x.txt line 3: bad token')" % str(log)
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1
    assert "error: data/x.txt line 3: bad token" in log.read_text()
    assert "bad token" in result.stderr


def test_progress_is_a_bar_on_a_terminal_and_log_lines_in_a_log_file(caplog):
    """Where stderr is a file, a tqdm loop's progress is log lines (at the start, at most every 30 s, at
    the end): with a total, done/total, the percentage, the rate and the ETA; without one, the count."""
    import io
    import logging

    from aiayn.io import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    logger = logging.getLogger("aiayn.test.progress")
    with caplog.at_level(logging.INFO, logger="aiayn.test.progress"):
        with progress(1000, "beam search", "sent", unit_scale=False, logger=logger, stream=io.StringIO()) as bar:
            for _ in range(10):
                bar.update(100)
        with progress(None, "archive.tgz", "B", logger=logger, stream=io.StringIO()) as bar:
            bar.update(12_345_678)
        terminal = Terminal()
        with progress(10, "lines", "lines", logger=logger, stream=terminal) as bar:
            bar.update(10)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4, lines
    assert lines[0] == "beam search: 0/1000 (0%), ?sent/s, ETA ?"
    assert lines[1].startswith("beam search: 1000/1000 (100%), ") and "sent/s, ETA 00:00" in lines[1]
    assert lines[2] == "archive.tgz: 0.00, ?B/s" and lines[3].startswith("archive.tgz: 12.3M, ")
    assert "100%|" in terminal.getvalue() and "\r" in terminal.getvalue()


def corpora(tmp_path, src: bytes, tgt: bytes):
    (tmp_path / "c.en").write_bytes(src)
    (tmp_path / "c.de").write_bytes(tgt)
    return [
        "--src-lang",
        "en",
        "--tgt-lang",
        "de",
        "--corpora",
        tmp_path / "c",
        "--out-prefix",
        tmp_path / "out/train",
        "--stats",
        tmp_path / "out/stats.json",
        "--log",
        tmp_path / "clean.log",
    ]


@pytest.mark.parametrize(
    "src, tgt, expected",
    [
        (b"a b\nc d\n", b"x y\n", r"c\.en: 2 lines, .*c\.de: 1 lines\): line i of each"),
        (b"a b\nc \xff d\n", b"x y\nz w\n", r"c\.en: line 2: .*invalid UTF-8 \(re-encode"),
    ],
)
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


@pytest.mark.parametrize(
    "module, error",
    [
        ("aiayn.runtime.devices", "GpuUnavailableError"),
        ("aiayn.data.download", "DownloadError"),
        ("aiayn.train.step", "NonFiniteError"),
    ],
)
def test_what_a_setting_or_the_data_mends_is_an_input_error_not_a_bug(module, error):
    """A GPU that is not there, a download that fails, a diverged model: each message names what to change,
    so each ends a stage with that one line (the test above), not as an internal error with a traceback."""
    assert issubclass(getattr(importlib.import_module(module), error), INPUT_ERRORS)


def test_a_bug_keeps_its_traceback_after_the_line(tmp_path):
    code = "from aiayn.io import setup_logging; setup_logging(); raise TypeError('unexpected')"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "AIAYN_DEBUG": ""}
    )
    assert result.returncode == 1
    assert result.stderr.index("internal error, TypeError: unexpected") < result.stderr.index("Traceback")


def test_a_full_disk_says_what_to_do(tmp_path):
    code = (
        "import errno; from aiayn.io import setup_logging; setup_logging(); "
        "raise OSError(errno.ENOSPC, 'No space left on device', 'results/x.pt')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "AIAYN_DEBUG": ""}
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no space left on the device writing results/x.pt" in result.stderr
    assert "run the same command again" in result.stderr


def test_a_json_file_that_does_not_parse_is_named_with_its_line(tmp_path):
    (tmp_path / "summary.json").write_text('{"step": 5,\n "loss": }\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"summary\.json: not valid JSON: Expecting value: line 2 column 10"):
        read_json(tmp_path / "summary.json")


@pytest.mark.parametrize(
    "raised",
    [
        "torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 20.00 GiB')",
        "RuntimeError('[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can\\'t allocate memory: "
        "you tried to allocate 640006400016 bytes. Error code 12 (Cannot allocate memory)')",
    ],
)
def test_memory_that_ran_out_is_one_line_not_a_bug(raised):
    """An allocation that failed, where no stage gave it context: one line saying what ran out and what to do."""
    code = f"import torch; from aiayn.io import setup_logging; setup_logging(); raise {raised}"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "AIAYN_DEBUG": ""}
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert re.search(
        r"error: out of memory \((CUDA out of memory|\[enforce fail).*\): a smaller batch \(the "
        r"stage's settings\) or a device with more memory",
        result.stderr,
    ), result.stderr
