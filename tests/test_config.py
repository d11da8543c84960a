import copy
import re

import pytest
import yaml
from paths import ROOT

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs


@pytest.fixture(scope="module")
def paper():
    return aiayn_config.load(ROOT / "config.yaml")


def test_paper_config_is_the_paper(paper):
    base = aiayn_runs.resolve(paper, "base", "en-de")
    assert base["model"] == {
        **base["model"],
        "n_layers": 6,
        "d_model": 512,
        "d_ff": 2048,
        "n_heads": 8,
        "d_k": 64,
        "d_v": 64,
        "dropout": 0.1,
        "positional": "sinusoid",
        "norm": "post",
    }
    assert base["train"]["adam_betas"] == [0.9, 0.98] and base["train"]["adam_eps"] == 1e-9
    assert base["train"]["warmup_steps"] == 4000 and base["train"]["label_smoothing"] == 0.1
    assert base["train"]["train_steps"] == 100000 and base["average"]["last"] == 5
    assert base["decode"] == {**base["decode"], "beam_size": 4, "length_penalty": 0.6, "max_len_a": 1, "max_len_b": 50}
    assert paper["tasks"]["en-de"]["vocab_size"] == 37000 and paper["tasks"]["en-fr"]["vocab_size"] == 32000


def test_table3_rows_override_only_what_the_paper_changes(paper):
    table = {row["row"]: row for row in _paper_table3()}
    base = aiayn_runs.resolve(paper, "base", "en-de")
    for exp in [e for e, spec in paper["experiments"].items() if "table3" in spec["tables"]]:
        run = aiayn_runs.resolve(paper, exp, "en-de")
        row = table[exp]
        for key in ("n_layers", "d_model", "d_ff", "n_heads", "d_k", "d_v", "dropout"):
            expected = row[key] if row[key] != "" else (table["base"][key] if exp != "big" else None)
            if expected is not None and expected != "":
                assert float(run["model"][key]) == float(expected), (exp, key)
        ls = row["label_smoothing"] or table["base"]["label_smoothing"]
        assert run["train"]["label_smoothing"] == float(ls), exp
        assert run["model"]["positional"] == (row["positional"] or "sinusoid")
        assert run["decode"] == base["decode"]


def _paper_table3():
    import csv

    text = ROOT / "src/aiayn/resources/paper_table3.csv"
    if not text.exists():
        pytest.skip("paper_table3.csv not packaged yet")
    return list(csv.DictReader(text.open()))


def test_big_uses_paper_dropout_per_pair(paper):
    assert aiayn_runs.resolve(paper, "big", "en-de")["model"]["dropout"] == 0.3
    assert aiayn_runs.resolve(paper, "big", "en-fr")["model"]["dropout"] == 0.1
    assert aiayn_runs.resolve(paper, "big", "en-fr")["average"]["last"] == 20
    assert aiayn_runs.resolve(paper, "big", "en-fr")["train"]["train_steps"] == 300000


def test_checkpoint_spacing_is_the_papers_in_steps(paper):
    """10 minutes of the paper's steps: 100k in 12 h (base), 300k in 3.5 days (big), rounded."""
    assert aiayn_runs.resolve(paper, "base", "en-de")["train"]["checkpoint_steps"] == 1400 == round(100000 / 72, -2)
    assert aiayn_runs.resolve(paper, "big", "en-de")["train"]["checkpoint_steps"] == 600 == round(300000 / 504, -2)
    demo = aiayn_runs.deep_merge(paper, yaml.safe_load((ROOT / "configs/demo.yaml").read_text()))
    for config in (paper, demo):
        for task, exp in aiayn_runs.runs(config):
            train, last = (run := aiayn_runs.resolve(config, exp, task))["train"], run["average"]["last"]
            assert train["train_steps"] // train["checkpoint_steps"] >= last <= train["keep_checkpoints"], (exp, task)


def test_parser_uses_tensor2tensors_parsing_preset(paper):
    """transformer_parsing_base over the base model; everything else is base's (paper section 6.3)."""
    parser, base = aiayn_runs.resolve(paper, "parser", "wsj"), aiayn_runs.resolve(paper, "base", "en-de")
    assert parser["model"] == {
        **base["model"],
        "n_layers": 4,
        "d_model": 1024,
        "d_k": 128,
        "d_v": 128,
        "dropout": 0.2,
        "attention_dropout": 0.2,
        "share_softmax": False,
    }
    assert parser["train"] == {**base["train"], "warmup_steps": 16000, "lr_scale": 0.5, "max_length": 512}
    assert parser["decode"] == {**base["decode"], "beam_size": 21, "length_penalty": 0.3, "max_len_b": 300}


def test_semi_supervised_parser_uses_transformer_parsing_big(paper):
    """With silver trees the parser takes tensor2tensor's transformer_parsing_big over the paper's 4 x 1024."""
    assert aiayn_runs.resolve(paper, "parser", "wsj")["model"]["n_heads"] == 8  # WSJ only: no silver, no change
    semi = copy.deepcopy(paper)
    semi["tasks"]["wsj"]["silver"] = {"path": "silver.txt", "ratio": 1.0}
    parser, wsj_only = aiayn_runs.resolve(semi, "parser", "wsj"), aiayn_runs.resolve(paper, "parser", "wsj")
    assert parser["model"] == {
        **wsj_only["model"],
        "d_ff": 4096,
        "n_heads": 16,
        "d_k": 64,
        "d_v": 64,
        "dropout": 0.1,
        "attention_dropout": 0.0,
        "share_embeddings": False,
        "share_softmax": True,
    }
    assert parser["model"]["n_layers"] == 4 and parser["model"]["d_model"] == 1024
    assert parser["train"] == {**wsj_only["train"], "warmup_steps": 4000, "tokens_per_step": 12500}
    assert parser["decode"] == wsj_only["decode"] and parser["average"] == wsj_only["average"]


def test_semi_supervised_needs_a_parsing_task_and_takes_null(paper):
    bad = copy.deepcopy(paper)
    bad["experiments"]["A1"]["semi_supervised"] = {"model": {"d_ff": 1}}
    with pytest.raises(aiayn_config.ConfigError, match=r"experiments\.A1\.semi_supervised: none of its tasks"):
        aiayn_config.validate(bad)
    null_d_ff = {"experiments": {"parser": {"semi_supervised": {"model": {"d_ff": None}}}}}
    overlay = aiayn_config.prune(aiayn_runs.deep_merge(paper, null_d_ff))
    overlay["tasks"]["wsj"]["silver"] = {"path": "silver.txt", "ratio": 1.0}
    aiayn_config.validate(overlay)
    assert aiayn_runs.resolve(overlay, "parser", "wsj")["model"]["d_ff"] == 2048


def test_semi_supervised_vocabulary_is_a_key(paper):
    wsj = copy.deepcopy(paper["tasks"]["wsj"])
    assert aiayn_runs.vocab_size(wsj) == 16000 and aiayn_runs.vocab_size(paper["tasks"]["en-de"]) == 37000
    wsj["silver"] = {"path": "silver.txt", "ratio": 1.0}
    assert aiayn_runs.vocab_size(wsj) == 32000


def test_unknown_key_is_an_error_naming_it(paper):
    bad = copy.deepcopy(paper)
    bad["experiments"]["A1"]["model"]["n_head"] = 2
    with pytest.raises(aiayn_config.ConfigError, match=r"experiments\.A1\.model.*n_head"):
        aiayn_config.validate(bad)


def test_wrong_type_and_unknown_task(paper):
    bad = copy.deepcopy(paper)
    bad["defaults"]["train"]["warmup_steps"] = "4000"
    with pytest.raises(aiayn_config.ConfigError, match=r"defaults\.train\.warmup_steps"):
        aiayn_config.validate(bad)
    bad = copy.deepcopy(paper)
    bad["experiments"]["E"]["tasks"] = ["en-xx"]
    with pytest.raises(aiayn_config.ConfigError, match="unknown task 'en-xx'"):
        aiayn_config.validate(bad)
    bad = copy.deepcopy(paper)
    del bad["sources"]["newstest2014"]["members"]["en-fr"]
    with pytest.raises(aiayn_config.ConfigError, match="newstest2014.members has no entry for task 'en-fr'"):
        aiayn_config.validate(bad)


def test_bleu_quote_handling_is_a_checked_key(paper):
    """bleu.straighten_quotes reaches the bleu stage's settings file; a bad value names the key."""
    assert aiayn_runs.settings_files(paper)["results/settings/bleu.json"] == {"straighten_quotes": "both"}
    paper_way = aiayn_runs.deep_merge(paper, {"bleu": {"straighten_quotes": "reference"}})
    assert aiayn_runs.settings_files(paper_way)["results/settings/bleu.json"] == {"straighten_quotes": "reference"}
    bad = aiayn_runs.deep_merge(paper, {"bleu": {"straighten_quotes": "hypothesis"}})
    with pytest.raises(aiayn_config.ConfigError, match=r"bleu\.straighten_quotes"):
        aiayn_config.validate(bad)


def test_normalization_is_per_side_or_both(paper):
    assert paper["data"]["tokenize"]["normalize_punctuation"] is False  # wmt16_en_de.sh: none
    per_side = copy.deepcopy(paper)
    per_side["data"]["tokenize"]["normalize_punctuation"] = {"source": True, "target": False}
    aiayn_config.validate(per_side)
    bad = copy.deepcopy(paper)
    bad["data"]["tokenize"]["normalize_punctuation"] = {"source": True}
    with pytest.raises(aiayn_config.ConfigError, match=r"data\.tokenize\.normalize_punctuation"):
        aiayn_config.validate(bad)


def test_demo_overlay_is_valid(paper):
    overlay = yaml.safe_load((ROOT / "configs/demo.yaml").read_text())
    merged = aiayn_runs.deep_merge(paper, overlay)
    aiayn_config.validate(merged, source="configs/demo.yaml")
    assert aiayn_runs.resolve(merged, "A4", "en-de")["model"]["n_heads"] == 16


def test_odd_d_model_with_sinusoids_is_refused_naming_the_run(paper):
    bad = copy.deepcopy(paper)
    bad["experiments"]["C4"]["model"]["d_model"] = 255
    with pytest.raises(aiayn_config.ConfigError, match=r"experiments\.C4 \(en-de\): model\.d_model must be even"):
        aiayn_config.validate(bad)
    bad["experiments"]["C4"]["model"]["positional"] = "learned"
    aiayn_config.validate(bad)


def test_bad_seeds_are_refused_naming_the_key(paper):
    for where, value in (("defaults", 0), ("experiments.A1", "2")):
        bad = copy.deepcopy(paper)
        section = bad["defaults"] if where == "defaults" else bad["experiments"]["A1"]
        section["seeds"] = value
        with pytest.raises(aiayn_config.ConfigError, match=re.escape(f"{where}.seeds")):
            aiayn_config.validate(bad)
    clash = aiayn_runs.deep_merge(
        paper, {"experiments": {"A1": {"seeds": 2}, "A1.seed2": {"tasks": ["en-de"], "tables": []}}}
    )
    with pytest.raises(aiayn_config.ConfigError, match=r"experiments\.A1\.seeds: seed 2 runs in en-de/A1\.seed2"):
        aiayn_config.validate(clash)
    merged = aiayn_runs.deep_merge(paper, {"experiments": {"A1": {"seeds": 2}}})
    merged["experiments"]["A1"]["seeds"] = None  # an overlay's null: defaults' seeds again
    assert "seeds" not in aiayn_config.prune(merged)["experiments"]["A1"]
    with pytest.raises(ValueError, match="unknown run 'A1.seed2'"):
        aiayn_runs.Records(paper).get("en-de", "A1.seed2")


def test_run_choice_limits_runs_and_names_unknown_keys(paper):
    config = copy.deepcopy(paper)
    config["run"] = {"tasks": ["en-fr"], "experiments": ["base", "big"]}
    aiayn_config.validate(config)
    assert aiayn_runs.runs(config) == [("en-fr", "base"), ("en-fr", "big")]
    assert aiayn_runs.runs(config, "table3") == aiayn_runs.runs(config)
    for run, message in (
        ({"tasks": ["de-en"]}, "run.tasks: unknown task 'de-en'"),
        ({"experiments": ["base", "Z"]}, "run.experiments: unknown experiment 'Z'"),
        ({"tasks": ["wsj"], "experiments": ["A1"]}, "run.experiments: 'A1' trains on"),
    ):
        config["run"] = run
        with pytest.raises(aiayn_config.ConfigError, match=re.escape(message)):
            aiayn_config.validate(config)


def test_null_deletes_entries_and_overrides(paper):
    overlay = {
        "tasks": {"en-fr": None},
        "experiments": {"A1": None, "parser": {"model": {"dropout": None}}},
        "sources": {"un": None},
    }
    merged = aiayn_runs.deep_merge(paper, overlay)
    merged["tasks"]["en-fr"], merged["sources"]["un"] = None, None  # deep_merge keeps a null as Snakemake does
    config = aiayn_config.prune(merged)
    aiayn_config.validate(config)
    assert "en-fr" not in config["tasks"] and "A1" not in config["experiments"] and "un" not in config["sources"]
    assert (
        config["experiments"]["base"]["tasks"] == ["en-de"]
        and "en-fr" not in config["experiments"]["big"]["task_overrides"]
    )
    assert aiayn_runs.resolve(config, "parser", "wsj")["model"]["dropout"] == 0.1
    assert aiayn_config.prune(paper) == paper
    typo = copy.deepcopy(paper)
    typo["experiments"]["A1"]["tasks"] = ["en-dee"]
    with pytest.raises(aiayn_config.ConfigError, match="experiments.A1.tasks: unknown task 'en-dee'"):
        aiayn_config.validate(aiayn_config.prune(typo))


def test_plain_file_sources_are_checked_naming_the_key(paper, tmp_path):
    config = copy.deepcopy(paper)
    here = tmp_path / "dev.en.xz"
    here.write_bytes(b"")
    config["sources"]["mine"] = {"files": {"en": str(here), "de": str(tmp_path / "dev.de")}}
    config["tasks"]["en-de"]["dev"] = "mine"
    with pytest.raises(aiayn_config.ConfigError, match=r"sources.mine.files.de: no such file"):
        aiayn_config.validate(config)
    config["sources"]["mine"]["files"]["de"] = "https://example.org/dev.tgz"
    with pytest.raises(aiayn_config.ConfigError, match=r"sources.mine.files.de: .* is an archive"):
        aiayn_config.validate(config)
    config["sources"]["mine"]["files"]["de"] = "ftp://example.org/dev.de"
    with pytest.raises(aiayn_config.ConfigError, match=r"sources.mine.files.de: unsupported URL scheme 'ftp'"):
        aiayn_config.validate(config)
    config["sources"]["mine"]["files"] = {"en": str(here)}
    with pytest.raises(aiayn_config.ConfigError, match=r"sources.mine.files lacks language\(s\) \['de'\]"):
        aiayn_config.validate(config)
    config["sources"]["mine"]["files"]["de"] = "https://example.org/dev.de.gz"
    aiayn_config.validate(config)  # a URL is checked against the lock when it is downloaded
    config["run"] = {"tasks": ["en-fr"]}
    config["sources"]["mine"]["files"]["de"] = str(tmp_path / "absent")
    aiayn_config.validate(config)  # a source no chosen run reads is not opened


def test_own_corpus_template_names_its_placeholder_files(paper, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own = yaml.safe_load((ROOT / "configs/own-corpus.yaml").read_text())
    config = aiayn_config.prune(aiayn_runs.deep_merge(paper, own))
    with pytest.raises(aiayn_config.ConfigError, match=r"sources.my_train.files.en: no such file 'corpus/train.en.gz'"):
        aiayn_config.validate(config)
    for name in ("train.en.gz", "train.de.gz", "dev.en", "dev.de", "test.en", "test.de"):
        (tmp_path / "corpus").mkdir(exist_ok=True)
        (tmp_path / "corpus" / name).write_bytes(b"")
    aiayn_config.validate(config)
    assert aiayn_runs.runs(config) == [("mine", "base")]


def test_the_demo_gpu_overlay_trains_every_run_on_the_gpu_and_compiles_base_big_and_the_parser():
    """``configs/demo-gpu.yaml`` (plan 3 of ``benchmarks/gpu/README.md``) over the demo: one GPU for every
    run, so its decoding and perplexity jobs claim it too; the step compiled for base, big and the parser
    only."""
    config = aiayn_config.load(ROOT / "config.yaml", ROOT / "configs/demo.yaml", ROOT / "configs/demo-gpu.yaml")
    compiled = set()
    for experiment, spec in config["experiments"].items():
        for task in spec["tasks"]:
            train = aiayn_runs.resolve(config, experiment, task)["train"]
            assert train["gpus"] == 1, (experiment, task)
            if train["compile"]:
                compiled.add(experiment)
    assert compiled == {"base", "big", "parser"} and len(config["experiments"]) > 20


def test_the_own_corpus_template_draws_no_paper_figures_and_says_nothing_of_them(tmp_path, monkeypatch, caplog):
    """configs/own-corpus.yaml runs none of the paper's runs, so it sets ``figures: null``: no warning that
    the figures' run (EN-DE base) is not run, on every command that reads the config."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    for name in ("train.en.gz", "train.de.gz", "dev.en", "dev.de", "test.en", "test.de"):
        (tmp_path / "corpus" / name).write_bytes(b"")
    config = aiayn_config.load(ROOT / "config.yaml", ROOT / "configs/own-corpus.yaml")
    with caplog.at_level("WARNING"):
        assert config["figures"] is None and aiayn_runs.figures_run(config) is None
    assert not caplog.records


def test_the_slurm_profile_leaves_decoding_and_scoring_their_runs_gpu_count():
    """profiles/slurm sets no gpu for translate and perplexity: the rules ask one where the run trains on
    GPUs and none where it trains on CPUs, and a profile's set-resources would override that for all."""
    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text(encoding="utf-8"))
    for rule in ("translate", "perplexity"):
        assert "gpu" not in profile["set-resources"][rule], rule
    rules = (ROOT / "workflow/rules/evaluate.smk").read_text(encoding="utf-8")
    assert rules.count("gpu=lambda w: min(1, gpus(w)),") == 2
