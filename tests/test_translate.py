import json

import pytest
import torch
from tiny_checkpoint import TEXT, write_tiny

from aiayn.decode import beam, translate
from aiayn.decode.beam import SpecialIds, beam_search, pad_sources
from aiayn.options import DecodeConfig

DECODE = {"beam_size": 3, "length_penalty": 0.6, "max_len_a": 1, "max_len_b": 5, "early_stop": True, "max_sentences": 2}
MODEL = {"n_layers": 1, "d_model": 16, "d_ff": 32, "n_heads": 2, "d_k": 8, "d_v": 8, "dropout": 0.0}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("translate")
    sp, model = write_tiny(root, MODEL, 1, step=1, averaged_steps=[1])
    (root / "decode.json").write_text(json.dumps(DECODE))
    lines = [" ".join(sp.encode(t, out_type=str)) for t in TEXT[:4]]
    (root / "test.en").write_text(
        "\n".join([lines[0], "", lines[1], lines[2] + " ▁Zzyzx", lines[3]]) + "\n", encoding="utf-8"
    )
    return root, sp, model


def test_translate_cli_keeps_lines_and_matches_beam_search(setup):
    root, sp, model = setup
    out = root / "test.hyp.tok"
    assert (
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(out),
                "--threads",
                "1",
                "--settings",
                str(root / "decode.json"),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    got = out.read_text(encoding="utf-8").split("\n")
    assert len(got) == 6 and got[1] == "" and got[5] == ""
    assert all(got[i] for i in (0, 2, 3, 4)), got
    sources = translate.read_sources(str(root / "test.en"), sp)
    assert sources.unknown_pieces == 1 and sources.ids[1] == []
    for line, ids in zip(got, sources.ids):
        if ids:
            opts = DecodeConfig(beam_size=3, length_penalty=0.6, max_len_a=1, max_len_b=5, early_stop=True)
            [hyp] = beam_search(model, pad_sources([ids], SpecialIds()), [len(ids)], opts)
            assert line == sp.decode(hyp.tokens)


def test_settings_file_is_checked_and_names_the_file(setup, tmp_path):
    root, _, _ = setup
    bad = tmp_path / "decode.json"
    bad.write_text(json.dumps(DECODE | {"beam": 2}))
    with pytest.raises(ValueError, match=r"decode\.json: unknown decode setting\(s\) \['beam'\]"):
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(tmp_path / "out"),
                "--settings",
                str(bad),
            ]
        )
    bad.write_text(json.dumps(DECODE | {"cpu_matmul": "blas"}))
    with pytest.raises(ValueError, match=r"decode\.json: decode\.cpu_matmul: 'blas' is not one of onednn, mkl"):
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(tmp_path / "out"),
                "--settings",
                str(bad),
            ]
        )
    assert not (tmp_path / "out").exists()


def test_vocabulary_mismatch_refused(setup):
    root, sp, _ = setup
    vocab = {"size": sp.get_piece_size() + 1, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    with pytest.raises(ValueError, match=r"vocabulary of avg\.pt .* does not match spm\.model"):
        translate.check_vocabulary("avg.pt", vocab, "spm.model", sp)
    assert translate.check_vocabulary("avg.pt", vocab | {"size": sp.get_piece_size()}, "spm.model", sp) == SpecialIds()


def test_a_gpu_that_cannot_be_used_is_a_clear_error_not_a_cpu_run(setup, monkeypatch):
    from aiayn.runtime.devices import GpuUnavailableError

    root, _, _ = setup
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GpuUnavailableError, match=r"--device cuda:1 but"):
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(root / "never.txt"),
                "--device",
                "cuda:1",
            ]
        )
    assert not (root / "never.txt").exists()


def test_bf16_decoding_runs_and_keeps_the_lines(setup):
    root, _, _ = setup
    out = root / "bf16.hyp.tok"
    bf16 = root / "decode.bf16.json"
    bf16.write_text(json.dumps(DECODE | {"precision": "bf16"}))
    assert (
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(out),
                "--threads",
                "1",
                "--device",
                "cpu",
                "--settings",
                str(bf16),
            ]
        )
        == 0
    )
    got = out.read_text(encoding="utf-8").split("\n")
    assert len(got) == 6 and got[1] == "" and all(got[i] for i in (0, 2, 3, 4))


def test_a_bad_input_or_sentencepiece_file_is_named(setup, tmp_path):
    root, sp, _ = setup
    (tmp_path / "test.en").write_bytes(b"a b\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"test\.en: line 2: invalid continuation byte at byte 3: invalid UTF-8"):
        translate.read_sources(str(tmp_path / "test.en"), sp)
    with pytest.raises(ValueError, match=r"decode\.json: not a readable sentencepiece model \(.*ModelProto"):
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "decode.json"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(tmp_path / "out"),
                "--device",
                "cpu",
            ]
        )


def test_a_line_too_long_for_the_memory_is_named_and_nothing_written(setup, tmp_path, monkeypatch):
    """The batch that does not fit is decoded a sentence at a time; a test-set line that does not fit alone
    stops the stage naming its file and line (skipping it would change the score unseen)."""
    root, _, _ = setup
    search, lines = beam.beam_search_n_best, (root / "test.en").read_text(encoding="utf-8").splitlines()
    longest = max(range(len(lines)), key=lambda i: len(lines[i].split()))
    assert sorted(len(line.split()) for line in lines)[-2] < len(lines[longest].split())

    def tight_memory(model, src, lengths, *args, **options):
        if max(lengths) >= len(lines[longest].split()):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return search(model, src, lengths, *args, **options)

    monkeypatch.setattr(beam, "beam_search_n_best", tight_memory)
    named = (
        rf"test\.en: line {longest + 1}: {len(lines[longest].split())} subwords, too long to decode in the "
        r"memory there is \(CUDA out of memory\. .*decode\.beam_size"
    )
    with pytest.raises(MemoryError, match=named):
        translate.main(
            [
                "--checkpoint",
                str(root / "avg.pt"),
                "--spm",
                str(root / "spm.model"),
                "--input",
                str(root / "test.en"),
                "--output",
                str(tmp_path / "out"),
                "--settings",
                str(root / "decode.json"),
                "--device",
                "cpu",
            ]
        )
    assert not (tmp_path / "out").exists()


def test_a_line_of_100000_characters_gets_an_empty_output_within_bounded_memory(setup, tmp_path):
    """A test set with a 100,000-character line (a lost newline): the stage, under a memory limit
    (RLIMIT_DATA, 1 GiB above what the process holds once it has imported the stage), skips that line
    as longer than decode.max_source_length (null: the model's max_positions), writes an empty output
    line for it, names the file and line in a warning, and decodes the others. Searched, its encoder's
    self-attention alone would need gigabytes."""
    import resource
    import subprocess
    import sys

    from paths import ROOT

    root, sp, _ = setup
    pieces = " ".join(sp.encode(TEXT[2], out_type=str))
    long = " ".join([pieces] * (100_000 // len(pieces) + 1))
    assert len(long) > 100_000
    source = tmp_path / "test.en"
    source.write_text(f"{pieces}\n{long}\n{pieces}\n", encoding="utf-8")
    probe = "import aiayn.decode.translate; print(open('/proc/self/status').read())"
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    status = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env).stdout
    data = next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmData:"))
    limit = data + 2**30
    command = [sys.executable, "-m", "aiayn.decode.translate", "--checkpoint", str(root / "avg.pt")]
    command += ["--spm", str(root / "spm.model"), "--input", str(source), "--output", str(tmp_path / "out")]
    command += ["--settings", str(root / "decode.json"), "--device", "cpu", "--threads", "1"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = (tmp_path / "out").read_text(encoding="utf-8").split("\n")
    assert out[1] == "" and out[0] and out[2] and len(out) == 4
    assert f"{source}: 1 line(s) of more than 1024 subwords (decode.max_source_length" in done.stderr
    assert "get an empty output: line(s) 2" in done.stderr
