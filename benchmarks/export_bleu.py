"""Test BLEU of one run's beam-4 output from three engines on the same weights: ours, CTranslate2 and
Hugging Face MarianMT (``aiayn-export``), each with its own length penalty at the run's alpha.

Ours divides log P by GNMT's ((5 + |Y|) / 6)^alpha, CTranslate2 and ``transformers`` by |Y|^alpha
(docs/serving.md, "Serving a model elsewhere"); everything else is the run's: beam size, alpha, the length
limit (|x| + ``max_len_b``; the engines take the batch's longest source), the sentencepiece model, the
Moses detokenizer. Each engine's output is scored as the workflow scores its own
(:func:`aiayn.evaluate.bleu.score`: sacreBLEU and the paper's method), with the number of sentences
whose output equals ours.

    PYTHONPATH=src python benchmarks/export_bleu.py --run results/demo/en-de/base \\
        --source data/demo/bpe/en-de/test.en --reference data/demo/raw/en-de/newstest2014.de [--work DIR]

``--source``: the test set's pieces as the workflow's bpe_encode rule wrote them. Prints one markdown
table; not a test. Deterministic (float32 on the CPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import sentencepiece
import torch

from aiayn import settings
from aiayn.data.detokenize import MosesDetok
from aiayn.data.lines import read_lines
from aiayn.decode.beam import SpecialIds, translate_sentences
from aiayn.decode.manifest import read_run
from aiayn.evaluate.bleu import score
from aiayn.export.run import export
from aiayn.options import DecodeConfig
from aiayn.runtime.session import load_model

BATCH = 64


def ours(run: Path, sources: list[list[int]], decode: DecodeConfig) -> list[list[int]]:
    model, _ = load_model(read_run(run).checkpoint)
    hyps = translate_sentences(model, sources, dataclasses.replace(decode, max_sentences=BATCH), ids=SpecialIds())
    return [h.tokens for h in hyps]


def ctranslate2_outputs(out: Path, sources: list[list[int]], pieces: list[str], decode: DecodeConfig):
    import ctranslate2

    translator = ctranslate2.Translator(str(out), device="cpu", compute_type="float32")
    results = translator.translate_batch(
        [[pieces[i] for i in s] for s in sources],
        max_batch_size=BATCH,
        beam_size=decode.beam_size,
        length_penalty=decode.length_penalty,
        min_decoding_length=decode.min_length,
        suppress_sequences=[["<pad>"], ["<s>"]],
        max_decoding_length=int(decode.max_len_a * max(map(len, sources)) + decode.max_len_b),
    )
    index = {piece: i for i, piece in enumerate(pieces)}
    return [[index[p] for p in r.hypotheses[0]] for r in results]


def marian_outputs(out: Path, sources: list[list[int]], decode: DecodeConfig):
    from transformers import MarianMTModel

    from aiayn.decode.beam import pad_sources

    model = MarianMTModel.from_pretrained(out).eval()
    outputs = []
    for start in range(0, len(sources), BATCH):
        batch = sources[start : start + BATCH]
        src = pad_sources(batch, SpecialIds())
        with torch.no_grad():
            generated = model.generate(
                input_ids=src,
                attention_mask=src.ne(0),
                num_beams=decode.beam_size,
                length_penalty=decode.length_penalty,
                early_stopping=True,
                min_new_tokens=decode.min_length,
                max_new_tokens=int(decode.max_len_a * max(map(len, batch)) + decode.max_len_b),
            )
        outputs += [[t for t in row.tolist()[1:] if t > 3] for row in generated]
    return outputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--source", type=Path, required=True, help="the test set's pieces, one sentence a line")
    parser.add_argument("--reference", type=Path, required=True, help="the raw reference")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="export_bleu."))
    files = read_run(args.run)
    decode = settings.read(files.decode, DecodeConfig, "decode")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(files.spm))
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    sources = [[sp.piece_to_id(p) for p in line.split()] for line in read_lines(str(args.source))]
    references = read_lines(str(args.reference))
    for engine in ("ctranslate2", "huggingface"):
        if not (work / engine).exists():
            export(args.run, engine, work / engine)
    outputs = {
        "aiayn": ours(args.run, sources, decode),
        "ctranslate2": ctranslate2_outputs(work / "ctranslate2", sources, pieces, decode),
        "huggingface (MarianMT)": marian_outputs(work / "huggingface", sources, decode),
    }
    detok = MosesDetok(files.target_lang)
    print(f"{args.run}: {len(sources)} sentences, beam {decode.beam_size}, alpha {decode.length_penalty}\n")
    print("| engine | sacreBLEU | paper-method BLEU | outputs equal to ours |")
    print("|---|---|---|---|")
    for engine, ids in outputs.items():
        text = [detok.line(sp.decode(hyp)) for hyp in ids]
        result = score(text, references, files.target_lang)
        same = sum(a == b for a, b in zip(ids, outputs["aiayn"]))
        print(f"| {engine} | {result['sacrebleu']:.2f} | {result['paper_bleu']:.2f} | {same} of {len(ids)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
