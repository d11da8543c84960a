import json
from dataclasses import dataclass

import pytest

from aiayn import settings


@dataclass(frozen=True)
class Beam:
    beam_size: int = 4
    length_penalty: float = 0.6


def test_settings_file_round_trip(tmp_path):
    out = tmp_path / "run" / "decode.json"
    assert settings.main(["--json", json.dumps({"length_penalty": 0.3, "beam_size": 21}), "--output", str(out)]) == 0
    assert out.read_text() == '{\n  "beam_size": 21,\n  "length_penalty": 0.3\n}\n'
    assert settings.read(out, Beam, "decode") == Beam(21, 0.3)
    assert settings.read(None, Beam, "decode") == Beam()


def test_unknown_key_and_bad_json_name_the_file(tmp_path):
    path = tmp_path / "decode.json"
    path.write_text('{"beam": 2}')
    with pytest.raises(
        ValueError,
        match=r"decode\.json: unknown decode setting\(s\) \['beam'\]; known: "
        r"\['beam_size', 'length_penalty'\]",
    ):
        settings.read(path, Beam, "decode")
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"decode\.json: decode: expected a mapping of settings, got list"):
        settings.read(path, Beam, "decode")
    path.write_text("{beam")
    with pytest.raises(ValueError, match=r"decode\.json: not valid JSON"):
        settings.read(path, Beam, "decode")
