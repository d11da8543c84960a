"""aiayn-translate and aiayn-parse on a tiny random model in a run directory laid out as the workflow's:
streaming from a pipe, bad lines, n-best output, the run manifest and its fallbacks."""

import io
import json
import os
import select
import subprocess
import sys
import time

import pytest
import sentencepiece as spm
import torch

from aiayn.data.detokenize import MosesDetok
from aiayn.data.tokenize import MosesPipeline
from aiayn.decode import beam, manifest, translate_text
from aiayn.decode.beam import SpecialIds, beam_search, pad_sources
from aiayn.decode.stream import LineBatches
from aiayn.model import Transformer
from aiayn.options import DecodeConfig, ModelConfig
from aiayn.parsing import parse
from aiayn.parsing.trees import parse_tree
from aiayn.runtime.checkpoint import Checkpoint, save_checkpoint
from aiayn.runtime.session import load_model

TEXT = [
    "the quick brown fox jumps over the lazy dog .",
    "a stitch in time saves nine .",
    "all that glitters is not gold .",
    "the early bird catches the worm .",
] * 20
DECODE = {"beam_size": 3, "length_penalty": 0.6, "max_len_a": 1, "max_len_b": 5, "early_stop": True, "max_sentences": 8}
MODEL = {
    "n_layers": 1,
    "d_model": 16,
    "d_ff": 32,
    "n_heads": 2,
    "d_k": 8,
    "d_v": 8,
    "dropout": 0.0,
    "positional": "learned",
    "max_positions": 64,
}
LONG = " ".join(["glitters"] * 60)  # more subwords than 64 learned positions allow


def save_model(path, seed, vocab_size):
    torch.manual_seed(seed)
    model = Transformer(ModelConfig.from_dict(MODEL), vocab_size).eval()
    vocab = {"size": vocab_size, "pad_id": 0, "unk_id": 1, "bos_id": 2, "eos_id": 3}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, Checkpoint(model=model.state_dict(), settings={"model": MODEL}, vocab=vocab, step=1))
    return model


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """``run/`` as the workflow leaves it, with its data under ``data/``."""
    root = tmp_path_factory.mktemp("interactive")
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT),
        model_writer=buffer,
        vocab_size=40,
        model_type="bpe",
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        normalization_rule_name="identity",
    )
    (root / "data").mkdir()
    (root / "data/spm.model").write_bytes(buffer.getvalue())
    (root / "data/tokenize.en.json").write_text(json.dumps({"normalize_punctuation": True}))
    size = spm.SentencePieceProcessor(model_file=str(root / "data/spm.model")).get_piece_size()
    run = root / "run"
    save_model(run / "avg.pt", 1, size)
    save_model(run / "train/checkpoint_last.pt", 2, size)
    (run / "settings").mkdir()
    (run / "settings/decode.json").write_text(json.dumps(DECODE))
    cwd = os.getcwd()
    os.chdir(root)  # the workflow passes paths relative to its directory
    try:
        assert (
            manifest.main(
                [
                    "--kind",
                    "translation",
                    "--source-lang",
                    "en",
                    "--target-lang",
                    "de",
                    "--spm",
                    "data/spm.model",
                    "--tokenize",
                    "data/tokenize.en.json",
                    "--output",
                    "run/inference.json",
                ]
            )
            == 0
        )
    finally:
        os.chdir(cwd)
    return run


def translate(run_dir, tmp_path, data: bytes, *options):
    (tmp_path / "in.txt").write_bytes(data)
    out = tmp_path / "out.txt"
    assert (
        translate_text.main(
            [
                "--run",
                str(run_dir),
                "--input",
                str(tmp_path / "in.txt"),
                "--output",
                str(out),
                "--device",
                "cpu",
                "--threads",
                "1",
                *options,
            ]
        )
        == 0
    )
    return out.read_text(encoding="utf-8").split("\n")[:-1]


def expected(run_dir, line, checkpoint="avg.pt"):
    """What the workflow's stages make of one line: tokenize, encode, beam search, decode, detokenize."""
    sp = spm.SentencePieceProcessor(model_file=str(run_dir / "../data/spm.model"))
    ids = sp.encode(MosesPipeline("en").line(line))
    model, _ = load_model(run_dir / checkpoint, "cpu")
    opts = DecodeConfig(beam_size=3, length_penalty=0.6, max_len_a=1, max_len_b=5)
    [hyp] = beam_search(model, pad_sources([ids], SpecialIds()), [len(ids)], opts)
    return MosesDetok("de").line(sp.decode(hyp.tokens)), hyp.score


def test_manifest_paths_are_relative_to_the_run(run_dir):
    content = json.loads((run_dir / "inference.json").read_text())
    assert content == {
        "kind": "translation",
        "source_lang": "en",
        "target_lang": "de",
        "spm": "../data/spm.model",
        "tokenize": "../data/tokenize.en.json",
    }
    files = manifest.read_run(run_dir)
    assert files.checkpoint == run_dir / "avg.pt" and files.spm.resolve() == (run_dir / "../data/spm.model").resolve()
    assert manifest.read_run(run_dir, "last").checkpoint == run_dir / "train/checkpoint_last.pt"


def test_output_is_the_workflow_stages_line_for_line(run_dir, tmp_path):
    got = translate(run_dir, tmp_path, "\n".join(TEXT[:3]).encode())  # no newline after the last line
    assert got == [expected(run_dir, line)[0] for line in TEXT[:3]]
    assert any(got)
    last = translate(run_dir, tmp_path, TEXT[0].encode() + b"\n", "--last")
    assert last == [expected(run_dir, TEXT[0], "train/checkpoint_last.pt")[0]]


def test_cpu_matmul_int8_decodes_with_int8_products(run_dir, tmp_path, monkeypatch):
    from aiayn.model.int8 import Int8Product, int8_available

    if not int8_available():
        pytest.skip("this torch build has no oneDNN int8 product")
    calls = []
    product = Int8Product.__call__
    monkeypatch.setattr(Int8Product, "__call__", lambda self, *a, **k: calls.append(1) or product(self, *a, **k))
    got = translate(run_dir, tmp_path, "\n".join(TEXT[:3]).encode(), "--cpu-matmul", "int8")
    assert len(got) == 3 and all(got) and calls


def test_bad_lines_give_defined_outputs_and_name_their_line(run_dir, tmp_path, capsys):
    lines = [TEXT[0].encode(), b"", b"caf\xe9 au lait", LONG.encode(), TEXT[1].encode()]
    got = translate(run_dir, tmp_path, b"\n".join(lines) + b"\n")
    assert got == [expected(run_dir, TEXT[0])[0], "", "", "", expected(run_dir, TEXT[1])[0]]
    warnings = [
        line.split(" WARNING aiayn.decode.translate_text: ")[1]
        for line in capsys.readouterr().err.splitlines()
        if " WARNING " in line
    ]
    assert any(w.startswith("line 3: invalid UTF-8 (invalid continuation byte at byte 3)") for w in warnings), warnings
    assert any(
        w.startswith("line 4: ") and "more than the 59 decoded (decode.max_source_length" in w for w in warnings
    ), warnings
    assert not any(w.startswith(("line 1:", "line 2:", "line 5:")) for w in warnings)


def test_a_line_too_long_for_the_memory_is_skipped_and_the_others_decoded(run_dir, tmp_path, monkeypatch, capsys):
    """The batch that does not fit is decoded a line at a time; the line that does not fit alone gets an empty
    output and a warning. The allocator is the CPU's, failing as it does for a source of 200,000 subwords."""
    sp = spm.SentencePieceProcessor(model_file=str(run_dir / "../data/spm.model"))
    fits = max(len(sp.encode(MosesPipeline("en").line(line))) for line in TEXT[:2])  # subwords of the longest
    search, big = beam.beam_search_n_best, f"{TEXT[1]} {TEXT[1]}"  # within the learned positions

    def tight_memory(model, src, lengths, *args, **options):
        if max(lengths) > fits:
            raise RuntimeError(
                "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                "memory: you tried to allocate 640006400016 bytes."
            )
        return search(model, src, lengths, *args, **options)

    monkeypatch.setattr(beam, "beam_search_n_best", tight_memory)
    got = translate(run_dir, tmp_path, f"{TEXT[0]}\n{big}\n{TEXT[1]}\n".encode())
    assert got == [expected(run_dir, TEXT[0])[0], "", expected(run_dir, TEXT[1])[0]]
    warnings = [line for line in capsys.readouterr().err.splitlines() if " WARNING " in line]
    assert len(warnings) == 2, warnings
    assert "do not fit in memory together: searched one at a time" in warnings[0]
    assert "line 2: " in warnings[1] and "too long to decode in the memory there is ([enforce fail" in warnings[1]


def test_n_best_and_scores(run_dir, tmp_path):
    got = translate(run_dir, tmp_path, f"{TEXT[0]}\n\n{LONG}\n{TEXT[1]}\n".encode(), "--n-best", "3", "--scores")
    rows = [line.split("\t") for line in got]
    assert {int(r[0]) for r in rows} == {1, 4}  # the empty and the over-long line give none
    for number, line in ((1, TEXT[0]), (4, TEXT[1])):
        mine = [r for r in rows if int(r[0]) == number]
        assert [int(r[1]) for r in mine] == list(range(1, len(mine) + 1)) and 1 <= len(mine) <= 3
        scores = [float(r[2]) for r in mine]
        assert scores == sorted(scores, reverse=True)
        text, score = expected(run_dir, line)
        assert mine[0][3] == text and scores[0] == pytest.approx(score, abs=1e-4)
    one = translate(run_dir, tmp_path, f"{TEXT[0]}\n".encode(), "--scores")
    assert one == [f"{expected(run_dir, TEXT[0])[1]:.4f}\t{expected(run_dir, TEXT[0])[0]}"]


def read_line(handle, seconds):
    """One line of ``handle`` (a pipe), or None after ``seconds``."""
    ready, _, _ = select.select([handle], [], [], seconds)
    return handle.readline().decode() if ready else None


@pytest.mark.slow
def test_each_line_is_answered_while_the_input_stays_open(run_dir, tmp_path):
    with open(tmp_path / "stderr", "wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aiayn.decode.translate_text",
                "--run",
                str(run_dir),
                "--device",
                "cpu",
                "--threads",
                "1",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            answers = []
            for line in TEXT[:2]:
                process.stdin.write(line.encode() + b"\n")
                process.stdin.flush()
                answers.append(read_line(process.stdout, 120))
            assert answers == [expected(run_dir, line)[0] + "\n" for line in TEXT[:2]], (
                tmp_path / "stderr"
            ).read_text()
            assert process.poll() is None  # still waiting for more input
            process.stdin.close()
            assert process.wait(60) == 0 and process.stdout.read() == b""
        finally:
            process.kill()
            process.wait()


def test_batches_take_what_is_available_and_wait_for_nothing_more():
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(read_end, False)  # a read that would wait fails the test instead of hanging it
        os.write(write_end, b"one\ntwo\nthr")
        batches = LineBatches(read_end, max_lines=5)
        started = time.monotonic()
        assert batches.next_batch() == [(1, b"one"), (2, b"two")]  # "thr" is not a line yet
        assert time.monotonic() - started < 5
        os.write(write_end, b"ee\n\nfour")
        os.close(write_end)
        write_end = None
        assert batches.next_batch() == [(3, b"three"), (4, b""), (5, b"four")]
        assert batches.next_batch() == []
    finally:
        os.close(read_end)
        if write_end is not None:
            os.close(write_end)


def test_batches_of_a_file_hold_at_most_the_batch_size(tmp_path):
    (tmp_path / "f").write_bytes(b"a\nb\nc\n")
    with open(tmp_path / "f", "rb") as handle:
        assert list(LineBatches(handle.fileno(), 2)) == [[(1, b"a"), (2, b"b")], [(3, b"c")]]


def test_longest_source_follows_the_key_the_positions_and_the_length_rule():
    from aiayn.decode.translate import longest_source

    paper = DecodeConfig()
    assert longest_source(ModelConfig(positional="learned"), paper) == 1024 - 50
    assert (
        longest_source(ModelConfig(positional="learned", max_positions=24), DecodeConfig(max_len_a=1, max_len_b=5))
        == 19
    )
    learned = ModelConfig(positional="learned", max_positions=24)
    assert longest_source(learned, DecodeConfig(max_len_a=0, max_len_b=2)) == 23  # source + eos
    assert longest_source(ModelConfig(), paper) == 1024  # sinusoids: the model's max_positions
    assert longest_source(ModelConfig(max_positions=300), paper) == 300
    assert longest_source(ModelConfig(), DecodeConfig(max_source_length=40)) == 40
    assert longest_source(learned, DecodeConfig(max_len_a=0, max_len_b=2, max_source_length=10)) == 10


def test_run_errors_name_what_to_do(run_dir, tmp_path):
    with pytest.raises(ValueError, match=r"inference\.json: no such file; the workflow writes it .*\)$"):
        manifest.read_run(tmp_path)  # aiayn-export, too, which has no flags for the files
    with pytest.raises(ValueError, match=r"no such file; the workflow .*; or give --checkpoint, --spm and --settings"):
        translate_text.main(["--run", str(tmp_path), "--input", os.devnull, "--device", "cpu"])
    parser_run = tmp_path / "parser"
    parser_run.mkdir()
    (parser_run / "settings").mkdir()
    (parser_run / "settings/decode.json").write_text("{}")
    manifest.write_manifest(
        str(parser_run / "inference.json"), "parsing", "words", "tree", str(run_dir / "../data/spm.model"), None
    )
    with pytest.raises(
        ValueError,
        match=r"parser: no checkpoint \(.*avg\.pt nor .*train/checkpoint_last\.pt\): "
        r"has the run trained\?",
    ):
        manifest.read_run(parser_run)
    (parser_run / "train").mkdir()
    (parser_run / "train/checkpoint_last.pt").write_bytes((run_dir / "avg.pt").read_bytes())
    assert manifest.read_run(parser_run).checkpoint == parser_run / "train/checkpoint_last.pt"  # no avg.pt yet
    with pytest.raises(ValueError, match=r"is a parsing run: use aiayn-parse"):
        translate_text.main(["--run", str(parser_run), "--input", os.devnull, "--device", "cpu"])


@pytest.mark.parametrize(
    "options, message",
    [
        (["--beam", "2", "--n-best", "3"], "--n-best must be between 1 and the beam size"),
        (["--checkpoint", "x.pt"], "give --run DIR, or --checkpoint and --spm"),
    ],
)
def test_impossible_options_refused_before_loading(options, message, capsys):
    with pytest.raises(SystemExit) as exit:
        translate_text.parse_args(["--run", "r"][: 0 if "--checkpoint" in options else 2] + options)
    assert exit.value.code == 2 and f"error: {message}" in capsys.readouterr().err


def test_parser_input_and_output_are_treebank_trees():
    assert parse.treebank_words(" He  said (twice) . ") == "He said -LRB-twice-RRB- ."
    assert (
        parse.tree_of("(S (NP XX )NP (VP XX XX", "The dog barks") == "(TOP (S (NP (XX The)) (VP (XX dog) (XX barks))))"
    )
    assert parse.tree_of("", "Hi !") == "(TOP (XX Hi) (XX !))"


def test_parse_with_explicit_paths_writes_one_tree_over_each_lines_words(run_dir, tmp_path):
    """Any model's output becomes a tree over exactly the input words (here a translation model's)."""
    lines = ["the dog (big) doesn't bark.", "", "a stitch in time"]
    (tmp_path / "words").write_text("\n".join(lines) + "\n")
    out = tmp_path / "trees"
    assert (
        parse.main(
            [
                "--checkpoint",
                str(run_dir / "avg.pt"),
                "--spm",
                str(run_dir / "../data/spm.model"),
                "--settings",
                str(run_dir / "settings/decode.json"),
                "--input",
                str(tmp_path / "words"),
                "--output",
                str(out),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    trees = out.read_text().split("\n")[:-1]
    assert trees[1] == "" and len(trees) == 3
    for tree, line in ((trees[0], "the dog -LRB- big -RRB- does n't bark ."), (trees[2], lines[2])):
        assert tree.startswith("(TOP ") and parse_tree(tree, "out", 1).words() == line.split()


def test_a_gpu_that_cannot_be_used_is_a_clear_error_not_a_cpu_run(run_dir, tmp_path, monkeypatch):
    from aiayn.runtime.devices import GpuUnavailableError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(GpuUnavailableError, match=r"--device cuda:1 but"):
        translate_text.main(
            ["--run", str(run_dir), "--input", os.devnull, "--output", str(tmp_path / "never"), "--device", "cuda:1"]
        )
    assert not (tmp_path / "never").exists()
