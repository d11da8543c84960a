import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest
import yaml
from paths import ROOT

from aiayn.data import download
from aiayn.data.download import DownloadError, load_lock, resolve_url
from aiayn.options.sources import archive_name

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB, several read blocks


class Server(http.server.ThreadingHTTPServer):
    """Serves ``files``; the first GET of a name in ``break_once`` closes after half the body."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files, self.break_once, self.no_range, self.requests = {}, set(), set(), []

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        name = self.path.rsplit("/", 1)[-1]
        self.server.requests.append((name, self.headers.get("Range")))
        data = self.server.files.get(name)
        if data is None:
            self.send_error(404)
            return
        ranged = self.headers.get("Range") and name not in self.server.no_range
        start = int(self.headers["Range"][6:-1]) if ranged else 0
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        body = data[start:]
        if name in self.server.break_once:
            self.server.break_once.discard(name)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture
def server():
    srv = Server()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _lock(tmp_path, entries):
    path = tmp_path / "sources.lock"
    path.write_text(json.dumps(entries))
    return str(path)


def _settings(tmp_path, lock, mirror=None):
    """``data.mirror`` and ``data.lock`` as the workflow's settings file."""
    path = tmp_path / "download.json"
    path.write_text(json.dumps({"mirror": mirror, "lock": lock}))
    return str(path)


def _pin(data):
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_interrupted_transfer_resumes_to_the_right_checksum(server, tmp_path):
    server.files["a.tgz"] = PAYLOAD
    server.break_once.add("a.tgz")
    lock = _lock(tmp_path, {"a.tgz": _pin(PAYLOAD)})
    out = tmp_path / "dl" / "a.tgz"
    assert (
        download.main(
            [
                "--url",
                f"{server.base}/a.tgz",
                "--out",
                str(out),
                "--settings",
                _settings(tmp_path, lock),
                "--retries",
                "2",
                "--backoff",
                "0",
            ]
        )
        == 0
    )
    assert out.read_bytes() == PAYLOAD and not Path(f"{out}.part").exists()
    assert server.requests[0] == ("a.tgz", None)
    assert server.requests[1] == ("a.tgz", f"bytes={len(PAYLOAD) // 2}-")
    download.download(f"{server.base}/a.tgz", out, lock_path=lock)  # present and verified: no request
    assert len(server.requests) == 2


def test_server_without_range_support_restarts_the_transfer(server, tmp_path):
    server.files["r.tgz"] = PAYLOAD
    server.break_once.add("r.tgz")
    server.no_range.add("r.tgz")
    out = tmp_path / "r.tgz"
    download.download(f"{server.base}/r.tgz", out, lock_path=_lock(tmp_path, {"r.tgz": _pin(PAYLOAD)}), backoff=0)
    assert out.read_bytes() == PAYLOAD
    assert [r for _, r in server.requests] == [None, f"bytes={len(PAYLOAD) // 2}-"]


def test_corrupted_archive_is_refused_and_removed(server, tmp_path):
    server.files["b.tgz"] = PAYLOAD[:-1] + b"\x00"
    lock = _lock(tmp_path, {"b.tgz": _pin(PAYLOAD)})
    out = tmp_path / "b.tgz"
    with pytest.raises(DownloadError) as error:
        download.download(f"{server.base}/b.tgz", out, lock_path=lock, backoff=0)
    expected, actual = _pin(PAYLOAD)["sha256"], hashlib.sha256(server.files["b.tgz"]).hexdigest()
    assert f"b.tgz: sha256 mismatch: expected {expected}, got {actual}" in str(error.value)
    assert not out.exists() and not Path(f"{out}.part").exists()


def test_size_mismatch_and_missing_file(server, tmp_path):
    server.files["c.tgz"] = PAYLOAD[:100]
    lock = _lock(tmp_path, {"c.tgz": _pin(PAYLOAD), "gone.tgz": _pin(b"")})
    with pytest.raises(DownloadError, match="c.tgz: size mismatch: expected 1048576 bytes, got 100"):
        download.download(f"{server.base}/c.tgz", tmp_path / "c.tgz", lock_path=lock, backoff=0)
    with pytest.raises(DownloadError, match="HTTP Error 404"):
        download.download(f"{server.base}/gone.tgz", tmp_path / "g.tgz", lock_path=lock, backoff=0)
    assert len(server.requests) == 2  # a 404 is not retried


def test_a_checksum_mismatch_ends_the_stage_with_one_line_not_as_a_bug(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "a.tgz").write_bytes(PAYLOAD[:10])
    settings = _settings(tmp_path, _lock(tmp_path, {"a.tgz": _pin(PAYLOAD)}))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aiayn.data.download",
            "--url",
            (tmp_path / "a.tgz").as_uri(),
            "--out",
            str(tmp_path / "out" / "a.tgz"),
            "--settings",
            settings,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "AIAYN_DEBUG": ""},
    )
    assert result.returncode == 1 and "error: a.tgz: size mismatch" in result.stderr, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_file_url_local_path_and_mirrors(server, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "d.tgz").write_bytes(PAYLOAD)
    server.files["d.tgz"] = PAYLOAD
    lock = _lock(tmp_path, {"d.tgz": _pin(PAYLOAD)})
    far = "http://www.statmt.org/wmt14/d.tgz"  # never contacted: the mirror stands in
    sources = {
        "file-url": (mirror.as_uri() + "/d.tgz", None),
        "path": (str(mirror / "d.tgz"), None),
        "mirror-dir": (far, str(mirror)),
        "mirror-file": (far, mirror.as_uri()),
        "mirror-http": (far, server.base + "/"),
    }
    for label, (url, mirror_arg) in sources.items():
        out = tmp_path / label / "d.tgz"
        download.download(url, out, mirror=mirror_arg, lock_path=lock, retries=0)
        assert out.read_bytes() == PAYLOAD, label
    assert server.requests == [("d.tgz", None)]


def test_resolve_url():
    url = "http://www.statmt.org/wmt10/training-giga-fren.tar"
    assert archive_name(url) == "training-giga-fren.tar"
    assert resolve_url(url, None) == url
    assert resolve_url(url, "/data/mirror") == "/data/mirror/training-giga-fren.tar"
    assert resolve_url(url, "https://hub.example/wmt/") == "https://hub.example/wmt/training-giga-fren.tar"


def test_unpinned_file_is_recorded_with_a_warning(server, tmp_path):
    server.files["dev.tgz"] = PAYLOAD
    lock = _lock(tmp_path, {"dev.tgz": {"sha256": None, "note": "none published"}})
    out, log = tmp_path / "dev.tgz", tmp_path / "dl.log"
    assert (
        download.main(
            [
                "--url",
                f"{server.base}/dev.tgz",
                "--out",
                str(out),
                "--settings",
                _settings(tmp_path, lock),
                "--log",
                str(log),
            ]
        )
        == 0
    )
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    assert Path(f"{out}.sha256").read_text() == f"{sha}  dev.tgz\n"
    assert "WARNING" in log.read_text() and "no published sha256" in log.read_text()


def test_md5_only_entry_is_verified(server, tmp_path):
    server.files["t.tgz"] = PAYLOAD
    lock = _lock(tmp_path, {"t.tgz": {"sha256": None, "md5": "0" * 32}})
    with pytest.raises(
        DownloadError, match=f"md5 mismatch: expected {'0' * 32}, got {hashlib.md5(PAYLOAD).hexdigest()}"
    ):
        download.download(f"{server.base}/t.tgz", tmp_path / "t.tgz", lock_path=lock)


def test_lock_entry_required_except_from_a_mirror(server, tmp_path):
    server.files["x.tgz"] = PAYLOAD
    lock = _lock(tmp_path, {})
    with pytest.raises(DownloadError, match=r"x.tgz: no entry in the lock file"):
        download.download(f"{server.base}/x.tgz", tmp_path / "x.tgz", lock_path=lock)
    download.download("http://www.statmt.org/x.tgz", tmp_path / "x.tgz", mirror=server.base, lock_path=lock)
    assert (tmp_path / "x.tgz").read_bytes() == PAYLOAD


def test_bad_lock_file_names_the_key(tmp_path):
    with pytest.raises(DownloadError, match=r"a.tgz.sha256: not a lower-case hex digest"):
        load_lock(_lock(tmp_path, {"a.tgz": {"sha256": "abc"}}))


def test_shipped_lock_covers_every_configured_source():
    lock = load_lock()
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    for source in config["sources"].values():
        entry = lock[archive_name(source["url"])]
        assert entry["url"] == source["url"]
        assert entry["sha256"] or entry.get("note"), source["url"]
    assert lock["test-full.tgz"]["md5"] == "a8cd784e006feb32ac6f3d9ec7eb389a"


def test_local_file_without_lock_entry_is_accepted_and_its_sha256_recorded(tmp_path):
    """A researcher's own corpus: a local path needs no lock entry; the mirror never replaces it."""
    corpus = tmp_path / "mine" / "train.en.gz"
    corpus.parent.mkdir()
    corpus.write_bytes(PAYLOAD)
    lock, out, log = _lock(tmp_path, {}), tmp_path / "dl" / "train.en.gz", tmp_path / "dl.log"
    settings = _settings(tmp_path, lock, mirror=str(tmp_path / "no-such-mirror"))
    assert download.main(["--url", str(corpus), "--out", str(out), "--settings", settings, "--log", str(log)]) == 0
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    assert out.read_bytes() == PAYLOAD
    assert Path(f"{out}.sha256").read_text() == f"{sha}  train.en.gz\n"
    assert f"sha256 {sha}" in log.read_text() and "local file without a lock entry" in log.read_text()


def test_local_file_with_a_lock_entry_is_verified(tmp_path):
    corpus = tmp_path / "train.de"
    corpus.write_bytes(PAYLOAD)
    lock = _lock(tmp_path, {"train.de": {"sha256": "0" * 64}})
    with pytest.raises(DownloadError, match="train.de: sha256 mismatch"):
        download.download(corpus.as_uri(), tmp_path / "out" / "train.de", lock_path=lock)
