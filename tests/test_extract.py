import gzip
import io
import tarfile

import pytest
from paths import SHARED_WMT as SHARED

from aiayn.data import extract
from aiayn.data.extract import sgm_line
from aiayn.data.lines import DataError

SGM = (
    '<srcset setid="newstest2014" srclang="any">\n'
    '<doc sysid="ref" docid="1" genre="news" origlang="en">\n'
    "<p>\n"
    '<seg id="1">Gutach: Noch mehr Sicherheit für Fußgänger</seg>\n'
    '<seg id="2">  Sie  stehen\tkeine 100\u00a0Meter voneinander entfernt </seg>\n'
    '<seg id="3"></seg>\n'
    ' <seg id="4">indented lines are not segments</seg>\n'
    "</p>\n</doc>\n</srcset>\n"
)


def _tar(path, members, mode="w:gz"):
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def test_sgm_golden_lines():
    assert sgm_line('<seg id="7">A  b\u00a0c </seg>\n') == "A b c"
    assert sgm_line('<seg id="8">x</seg> trailing\n') == "x trailing"  # sacreBLEU's regex keeps it
    assert sgm_line("<p>\n") is None


def test_extract_sgm_plain_and_gzip_members(tmp_path):
    archive = _tar(
        tmp_path / "a.tgz",
        {
            "test-full/newstest2014-deen-ref.de.sgm": SGM.encode(),
            "./training/corpus.en": "one\ntwo\nno newline at end".encode(),
            "giga.en.gz": gzip.compress("größe\nzwei\n".encode()),
        },
    )
    cases = {
        "test-full/newstest2014-deen-ref.de.sgm": (
            "Gutach: Noch mehr Sicherheit für Fußgänger\nSie stehen keine 100 Meter voneinander entfernt\n\n"
        ),
        "training/corpus.en": "one\ntwo\nno newline at end\n",
        "giga.en.gz": "größe\nzwei\n",
    }
    for member, expected in cases.items():
        out = tmp_path / "out.txt"
        assert extract.main(["--archive", archive, "--member", member, "--out", str(out)]) == 0
        assert out.read_text(encoding="utf-8") == expected


def test_gzip_member_inside_plain_tar(tmp_path):
    archive = _tar(tmp_path / "g.tar", {"x.fr.gz": gzip.compress(b"un\ndeux\n")}, mode="w")
    assert extract.extract(archive, "x.fr.gz", str(tmp_path / "o")) == 2


def test_missing_member_lists_similar_names(tmp_path):
    archive = _tar(
        tmp_path / "a.tgz", {"training/europarl-v7.de-en.en": b"a\n", "training/europarl-v7.de-en.de": b"b\n"}
    )
    with pytest.raises(
        DataError,
        match=r"no member 'training/europarl-v7.fr-en.en'; similar names: "
        r"\['training/europarl-v7.de-en.en'",
    ):
        extract.extract(archive, "training/europarl-v7.fr-en.en", str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_invalid_utf8_names_archive_member_and_line(tmp_path):
    archive = _tar(tmp_path / "a.tgz", {"c.en": b"fine\nfine\n\xc3\x28 broken\n"})
    with pytest.raises(DataError, match=r"a\.tgz:c\.en: line 3: invalid UTF-8"):
        extract.extract(archive, "c.en", str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_real_newstest2014_sgm_matches_sacrebleu_text(tmp_path):
    sgm = SHARED / "sgm_newstest2014-full" / "newstest2014-fren-ref.fr.sgm"
    if not sgm.exists():
        pytest.skip(f"shared WMT data not found at {SHARED}")
    archive = _tar(tmp_path / "test-full.tgz", {"test-full/newstest2014-fren-ref.fr.sgm": sgm.read_bytes()})
    extract.extract(archive, "test-full/newstest2014-fren-ref.fr.sgm", str(tmp_path / "ref.fr"))
    assert (tmp_path / "ref.fr").read_bytes() == (SHARED / "plain" / "newstest2014-full.en-fr.fr").read_bytes()


@pytest.mark.parametrize("suffix,opener", [("", open), (".gz", gzip.open), (".xz", None), (".bz2", None)])
def test_plain_file_round_trips_in_every_format(tmp_path, suffix, opener):
    import bz2
    import lzma

    opener = {".xz": lzma.open, ".bz2": bz2.open}.get(suffix, opener)
    text = "Ein Satz.\nZweiter Satz ohne Zeilenende"
    path = tmp_path / f"train.de{suffix}"
    with opener(path, "wb") as handle:
        handle.write(text.encode("utf-8"))
    out = tmp_path / "out.de"
    assert extract.main(["--file", str(path), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == text + "\n"


def test_a_windows_file_loses_its_byte_order_mark_and_carriage_returns_only(tmp_path, caplog):
    path = tmp_path / "train.de"
    path.write_bytes("\ufeffEin Satz.\r\nZwei\rdrei.\r\nletzte Zeile".encode("utf-8"))
    out = tmp_path / "out.de"
    with caplog.at_level("INFO"):
        assert extract.convert(str(path), str(out)) == 3
    assert out.read_bytes() == "Ein Satz.\nZwei\rdrei.\nletzte Zeile\n".encode("utf-8")
    assert "dropped the byte order mark" in caplog.text and "2 lines ended in CRLF" in caplog.text


def test_plain_sgm_file_is_the_real_test_set(tmp_path):
    """newstest2014's source sgm given as a plain (gzipped) file gives sacreBLEU's 3003 lines exactly."""
    sgm = SHARED / "sgm_newstest2014-full" / "newstest2014-deen-src.en.sgm"
    plain = SHARED / "plain" / "newstest2014-full.en-de.en"
    if not sgm.is_file():
        pytest.skip("shared WMT data not present")
    packed = tmp_path / "newstest2014.en.sgm.gz"
    packed.write_bytes(gzip.compress(sgm.read_bytes()))
    out = tmp_path / "test.en"
    assert extract.convert(str(packed), str(out)) == 3003
    assert out.read_bytes() == plain.read_bytes()


def test_bad_plain_files_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.en"
    bad.write_bytes(b"fine\n\xff\xfe\n")
    with pytest.raises(DataError, match=r"bad.en: line 2: invalid UTF-8"):
        extract.convert(str(bad), str(tmp_path / "out"))
    broken = tmp_path / "broken.en.gz"
    broken.write_bytes(gzip.compress(b"a\n" * 1000)[:-20])
    with pytest.raises(DataError, match=r"broken.en.gz: cannot decompress"):
        extract.convert(str(broken), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    with pytest.raises(DataError, match=r"bad.en: line 2: invalid UTF-8"):  # the CLI: logged, exit 1 (aiayn.io)
        extract.main(["--file", str(bad), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


def test_member_without_archive_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit:
        extract.main(["--file", str(tmp_path / "a.en"), "--member", "x", "--out", str(tmp_path / "o")])
    assert exit.value.code == 2
    assert "error: --archive and --member go together (--file takes neither)" in capsys.readouterr().err
