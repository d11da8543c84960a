"""What re-tokenizing the hypothesis costs the paper-method BLEU: tensor2tensor's scoring against ours.

tensor2tensor's authors scored the EN-DE BPE model's output as it came out, Moses-tokenized and
escaped like its training data, without running ``tokenizer.perl`` on it again (tensorflow/
tensor2tensor issue #317, lukaszkaiser, 2017-09-29: "do not re-run MOSES tokenizer on the decoded
output"). This workflow detokenizes its output (the translations it writes are plain text) and the
paper method (:mod:`aiayn.evaluate.bleu`) tokenizes it again. The two agree exactly where
tokenize(detokenize(tokens)) gives the tokens back; this measures where it does not, on a perfect
hypothesis: each newstest2014 reference (``../shared/data/wmt/plain``), quotes straightened, Moses-
tokenized with escaping (what a model trained on the paper's data would write when right), scored

- as tensor2tensor did: those tokens, compound-split, against the reference, tokenized once;
- as this workflow does: the tokens detokenized (entities unescaped), then the paper method.

    PYTHONPATH=src python benchmarks/studies/retokenization_effect.py
    PYTHONPATH=src python benchmarks/studies/retokenization_effect.py \
        --hypothesis results/demo/en-de/base/test-avg.hyp.tok --reference data/demo/raw/en-de/newstest2014.de --lang de

With ``--hypothesis`` (a run's Moses-tokenized output, ``<run>/test-avg.hyp.tok``, not escaped: the
workflow's data is not) the same two ways score a model's real output against ``--reference``: its
tokens escaped as ``tokenizer.perl`` would have written them, as they are, against the workflow's
detokenize-then-tokenize. Prints one markdown table; not a test. Deterministic.
"""

from __future__ import annotations

import argparse

from preprocessing_effect import WMT, print_table

from aiayn.data.detokenize import MosesDetok
from aiayn.data.lines import read_lines
from aiayn.evaluate.bleu import (
    moses_tokenize,
    multi_bleu,
    paper_tokenize,
    perl_split,
    split_compounds,
    straighten_quotes,
)

TESTS = (("en-de", "de"), ("en-fr", "fr"))


def measure(task: str, lang: str) -> dict:
    reference, _ = straighten_quotes(read_lines(str(WMT / "plain" / f"newstest2014-full.{task}.{lang}")))
    ref_tokens = paper_tokenize(reference, lang)
    model_output = moses_tokenize(reference, lang)  # a perfect model's tokens, escaped as its training data
    as_is = [perl_split(split_compounds(line)) for line in model_output]
    retokenized = paper_tokenize(MosesDetok(lang, unescape=True)(model_output), lang)
    changed = sum(a != b for a, b in zip(as_is, retokenized))
    return {
        "test set": f"newstest2014 {task}",
        "lines": len(reference),
        "BLEU, output as it is (tensor2tensor)": round(multi_bleu(as_is, ref_tokens).bleu, 2),
        "BLEU, detokenized and tokenized again (ours)": round(multi_bleu(retokenized, ref_tokens).bleu, 2),
        "lines the round trip changes": changed,
    }


def measure_output(hypothesis: str, reference: str, lang: str) -> dict:
    """The two procedures on a model's tokenized output (see the module docstring)."""
    from sacremoses import MosesTokenizer

    escape = MosesTokenizer(lang=lang).escape_xml
    tokens, _ = straighten_quotes(read_lines(hypothesis))
    refs, _ = straighten_quotes(read_lines(reference))
    ref_tokens = paper_tokenize(refs, lang)
    plain = MosesDetok(lang)(tokens)
    as_is = [perl_split(split_compounds(escape(line))) for line in tokens]
    retokenized = paper_tokenize(plain, lang)
    return {
        "test set": hypothesis,
        "lines": len(tokens),
        "BLEU, output as it is (tensor2tensor)": round(multi_bleu(as_is, ref_tokens).bleu, 2),
        "BLEU, detokenized and tokenized again (ours)": round(multi_bleu(retokenized, ref_tokens).bleu, 2),
        "lines the round trip changes": sum(a != b for a, b in zip(as_is, retokenized)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hypothesis", help="a run's tokenized output (<run>/test-avg.hyp.tok)")
    parser.add_argument("--reference", help="its raw reference")
    parser.add_argument("--lang", help="the target language")
    args = parser.parse_args(argv)
    if args.hypothesis:
        rows = [measure_output(args.hypothesis, args.reference, args.lang)]
    else:
        rows = [measure(task, lang) for task, lang in TESTS]
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
