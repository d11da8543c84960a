import json

import pytest

from aiayn.data import clean
from aiayn.data.lines import DataError
from aiayn.options import CleanConfig

# (en, de, why dropped under min_len=2, max_len=5, max_ratio=1.5)
PAIRS_A = [
    ("a b c", "x y z", None),
    ("", "x y", "empty"),
    ("a b", "  ", "empty"),
    ("a", "x", "too_short"),
    ("a b c d e f", "u v w x y z", "too_long"),
    ("a b", "u v w x", "ratio"),
    ("a  b   c", "x\ty z w", None),  # ratio 4/3 <= 1.5; whitespace collapsed on output
]
PAIRS_B = [
    ("p q", "r s", None),
    ("p q r s t", "r s t u", None),
    ("p q r", "r", "too_short"),
]


def _write_corpus(prefix, pairs):
    for index, lang in enumerate(("en", "de")):
        prefix.with_name(f"{prefix.name}.{lang}").write_text(
            "".join(pair[index] + "\n" for pair in pairs), encoding="utf-8"
        )


def _settings(directory, **values) -> str:
    """A ``data.clean`` settings file, as the workflow writes it."""
    path = directory / "clean.json"
    path.write_text(json.dumps(values))
    return str(path)


def test_every_drop_reason_is_counted(tmp_path):
    _write_corpus(tmp_path / "a", PAIRS_A)
    _write_corpus(tmp_path / "b", PAIRS_B)
    out, stats_path = tmp_path / "out" / "train", tmp_path / "out" / "train.stats.json"
    assert (
        clean.main(
            [
                "--src-lang",
                "en",
                "--tgt-lang",
                "de",
                "--corpora",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                "--out-prefix",
                str(out),
                "--stats",
                str(stats_path),
                "--settings",
                _settings(tmp_path, min_len=2, max_len=5, max_ratio=1.5),
            ]
        )
        == 0
    )
    stats = json.loads(stats_path.read_text())
    assert stats["corpora"][str(tmp_path / "a")] == {
        "read": 7,
        "kept": 2,
        "empty": 2,
        "too_short": 1,
        "too_long": 1,
        "ratio": 1,
    }
    assert stats["corpora"][str(tmp_path / "b")] == {
        "read": 3,
        "kept": 2,
        "empty": 0,
        "too_short": 1,
        "too_long": 0,
        "ratio": 0,
    }
    assert stats["total"] == {"read": 10, "kept": 4, "empty": 2, "too_short": 2, "too_long": 1, "ratio": 1}
    assert (tmp_path / "out" / "train.en").read_text() == "a b c\na b c\np q\np q r s t\n"
    assert (tmp_path / "out" / "train.de").read_text() == "x y z\nx y z w\nr s\nr s t u\n"


def test_none_limits_keep_every_non_empty_pair(tmp_path):
    _write_corpus(tmp_path / "a", PAIRS_A)
    assert (
        clean.main(
            [
                "--src-lang",
                "en",
                "--tgt-lang",
                "de",
                "--corpora",
                str(tmp_path / "a"),
                "--out-prefix",
                str(tmp_path / "o"),
                "--stats",
                str(tmp_path / "s.json"),
                "--settings",
                _settings(tmp_path, max_len=None, max_ratio=None),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "s.json").read_text())["total"]["kept"] == 5


def test_rules_golden():
    rules = CleanConfig(min_len=1, max_len=250, max_ratio=1.5)
    assert rules.reason(3, 2) is None  # 1.5 is allowed
    assert rules.reason(4, 2) == "ratio"
    assert rules.reason(251, 250) == "too_long"
    assert rules.reason(0, 0) == "empty"


def test_misaligned_corpus_names_both_files(tmp_path):
    (tmp_path / "c.en").write_text("a\nb\nc\n")
    (tmp_path / "c.de").write_text("a\nb\n")
    with pytest.raises(DataError, match=r"c\.en: 3 lines, .*c\.de: 2 lines"):
        clean.main(
            [
                "--src-lang",
                "en",
                "--tgt-lang",
                "de",
                "--corpora",
                str(tmp_path / "c"),
                "--out-prefix",
                str(tmp_path / "o"),
                "--stats",
                str(tmp_path / "s.json"),
            ]
        )
    assert not (tmp_path / "o.en").exists()


def _clean(tmp_path, *names, **rules):
    return clean.main(
        [
            "--src-lang",
            "en",
            "--tgt-lang",
            "de",
            "--corpora",
            *[str(tmp_path / n) for n in names],
            "--out-prefix",
            str(tmp_path / "out/train"),
            "--stats",
            str(tmp_path / "out/s.json"),
            "--settings",
            _settings(tmp_path, **rules),
        ]
    )


def test_an_empty_corpus_is_an_error_before_bpe(tmp_path):
    _write_corpus(tmp_path / "a", PAIRS_A)
    _write_corpus(tmp_path / "empty", [])
    with pytest.raises(DataError, match=r"empty\.en/\.de are empty"):
        _clean(tmp_path, "a", "empty")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_corpus_that_loses_every_pair_names_the_rule_and_its_key(tmp_path):
    _write_corpus(tmp_path / "b", PAIRS_B)
    _write_corpus(tmp_path / "long", [("a b c d e f g", "u v w x y z q", "too_long")] * 3 + [("a", "b c d", "")])
    with pytest.raises(
        DataError,
        match=r"long: all 4 pairs were dropped, 3 by the 'too_long' rule "
        r"\(data\.clean\.max_len; read 4, kept 0",
    ):
        _clean(tmp_path, "b", "long", min_len=1, max_len=5, max_ratio=1.5)
    assert not (tmp_path / "out/train.en").exists() and not (tmp_path / "out/s.json").exists()


def test_a_corpus_that_is_empty_or_loses_every_pair_is_named_with_the_advice_that_fits():
    """An empty corpus is not a cleaning setting's doing: the advice to loosen one comes only where a rule
    dropped every pair."""
    empty = {"read": 0, "kept": 0} | {reason: 0 for reason in clean.REASONS}
    with pytest.raises(DataError) as raised:
        clean.check_kept({"tok/en-de/news": empty}, "en", "de")
    assert "tok/en-de/news.en/.de are empty" in str(raised.value) and "loosen" not in str(raised.value)
    lost = empty | {"read": 5, "too_long": 5}
    with pytest.raises(DataError) as raised:
        clean.check_kept({"tok/en-de/news": lost}, "en", "de")
    assert "all 5 pairs were dropped, 5 by the 'too_long' rule" in str(raised.value)
    assert "loosen that data.clean setting" in str(raised.value)
