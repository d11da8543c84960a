# Configuration checks at parse time, and the functions that map a run to its files.
import json
import os
import re
import urllib.parse

import yaml

from aiayn import config as aiayn_config

aiayn_config.validate(config, source="config (config.yaml plus --configfile overlays)")

D = config["data_dir"]
R = config["results_dir"]
TASKS = config["tasks"]
SOURCES = config["sources"]
TRANSLATION = [t for t, spec in TASKS.items() if spec["kind"] == "translation"]
PARSING = [t for t, spec in TASKS.items() if spec["kind"] == "parsing"]
EXPERIMENTS = list(config["experiments"])
DEMO_MIRROR = f"{D}/demo_mirror"


def _alternatives(names):
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    task=_alternatives(TASKS),
    ttask=_alternatives(TRANSLATION),
    ptask=_alternatives(PARSING),
    exp=_alternatives(EXPERIMENTS),
    corpus=_alternatives(SOURCES),
    split="train|dev|test",
    ckpt="avg|last",
    lang="[a-z]{2}",
    side="[a-z]+",
    archive=r"[^/]+",


def archive_name(corpus):
    return os.path.basename(urllib.parse.urlparse(SOURCES[corpus]["url"]).path)


ARCHIVE_URLS = {archive_name(c): SOURCES[c]["url"] for c in SOURCES}


def mirror():
    return DEMO_MIRROR if "demo" in config else config["data"]["mirror"]


def lock_file():
    return f"{DEMO_MIRROR}/sources.lock" if "demo" in config else config["data"]["lock"]


def treebank(task):
    return f"{DEMO_MIRROR}/treebank" if "demo" in config else TASKS[task]["treebank"]


def sides(task):
    spec = TASKS[task]
    return (spec["src"], spec["tgt"]) if spec["kind"] == "translation" else ("words", "tree")


def settings(wildcards):
    return aiayn_config.resolve(config, wildcards.exp, wildcards.task)


def train_settings(wildcards):
    """What training depends on: averaging and decoding changes must not retrain."""
    return {k: v for k, v in settings(wildcards).items() if k not in ("average", "decode")}


def settings_file(wildcards, section):
    return f"{R}/{wildcards.task}/{wildcards.exp}/settings/{section}.json"


def _write_if_changed(path, text):
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(f"{path}.tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(f"{path}.tmp", path)


def _settings_files():
    """Every settings file and its content: what each stage depends on in the config."""
    data = config["data"]
    files = {
        f"{R}/config.yaml": yaml.safe_dump(config, sort_keys=False),
        f"{D}/settings/sources.json": SOURCES,
        f"{D}/settings/demo.json": {"demo": config.get("demo"), "sources": SOURCES},
        f"{D}/settings/tokenize.json": data["tokenize"],
        f"{D}/settings/clean.json": data["clean"],
        f"{D}/settings/shards.json": data["shards"],
    }
    for task, spec in TASKS.items():
        files[f"{D}/settings/{task}/bpe.json"] = {"bpe": data["bpe"], "vocab_size": spec["vocab_size"]}
        files[f"{D}/settings/{task}/task.json"] = spec
    for task, exp in aiayn_config.runs(config):
        resolved = aiayn_config.resolve(config, exp, task)
        files[f"{R}/{task}/{exp}/settings/train.json"] = {
            k: v for k, v in resolved.items() if k not in ("average", "decode")
        }
        files[f"{R}/{task}/{exp}/settings/average.json"] = resolved["average"]
        files[f"{R}/{task}/{exp}/settings/decode.json"] = resolved["decode"]
    return files


def _sync_settings_files():
    """Write the settings files, each only when its content changes. Rules take them as inputs, so a
    config change reruns exactly the stages that depend on it (profiles/default: mtime triggers;
    Snakemake does not track parameters computed from wildcards)."""
    for path, value in _settings_files().items():
        text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True) + "\n"
        _write_if_changed(path, text)


_sync_settings_files()


def split_corpus(task, split):
    return TASKS[task][split]


def text(task, split, side):
    """Tokenized text of one side of a split: what BPE learns from and encodes."""
    if TASKS[task]["kind"] == "parsing":
        return f"{D}/tok/{task}/{split}.{side}"
    if split == "train":
        return f"{D}/clean/{task}/train.{side}"
    return f"{D}/tok/{task}/{split_corpus(task, split)}.{side}"


def raw_reference(task, split):
    return f"{D}/raw/{task}/{split_corpus(task, split)}.{sides(task)[1]}"


def checkpoint(wildcards):
    run = f"{R}/{wildcards.task}/{wildcards.exp}"
    return f"{run}/avg.pt" if wildcards.ckpt == "avg" else f"{run}/train/checkpoint_last.pt"


def table3_task(exp):
    return config["experiments"][exp]["tasks"][0]


def table_inputs(table):
    """The metric files one table is computed from (docs/ARCHITECTURE.md)."""
    files = []
    for task, exp in aiayn_config.runs(config, table):
        run = f"{R}/{task}/{exp}"
        if table == "table3":
            if task != table3_task(exp):
                continue
            files += [f"{run}/dev-last.bleu.json", f"{run}/dev-last.ppl.json", f"{run}/train/summary.json"]
        elif table == "table2":
            files += [f"{run}/test-avg.bleu.json", f"{run}/train/summary.json", f"{R}/{task}/baseline/test-copy.bleu.json"]
        else:
            files += [f"{run}/test-avg.evalb.json", f"{run}/train/summary.json", f"{R}/{task}/baseline/test-flat.evalb.json"]
    return sorted(set(files))


def _tables_requested():
    wanted = []
    for table in ("table2", "table3", "table4"):
        runs = aiayn_config.runs(config, table)
        if not runs:
            continue
        missing = [t for t, _ in runs if TASKS[t]["kind"] == "parsing" and not treebank(t)]
        if missing:
            logger.warning(
                f"{table} skipped: tasks.{missing[0]}.treebank is not set "
                "(point it at your licensed WSJ treebank, LDC99T42)"
            )
            continue
        wanted.append(table)
    return wanted


TABLES = _tables_requested()


def tables_requested():
    return TABLES


def all_targets():
    tables = tables_requested()
    targets = [f"{R}/tables/{t}.{ext}" for t in tables for ext in ("md", "csv", "tex")]
    return targets + [f"{R}/plots"]


# Command-line flags built from the config.


def tokenize_flags():
    opts = config["data"]["tokenize"]
    flags = [f"--chunk-lines {opts.get('chunk_lines', 20000)}"]
    flags += ["--no-normalize-punctuation"] if not opts.get("normalize_punctuation", True) else []
    flags += ["--no-remove-non-printing"] if not opts.get("remove_non_printing", True) else []
    flags += ["--no-aggressive-dash-splits"] if not opts.get("aggressive_dash_splits", True) else []
    flags += ["--escape"] if opts.get("escape", False) else []
    return " ".join(flags)


def clean_flags():
    opts = config["data"]["clean"]
    none = lambda v: "none" if v is None else v
    return (
        f"--min-len {opts.get('min_len', 1)} --max-len {none(opts.get('max_len'))}"
        f" --max-ratio {none(opts.get('max_ratio'))}"
    )


def treebank_input(wildcards):
    return [f"{DEMO_MIRROR}/treebank"] if "demo" in config else []


def prepare_flags(task):
    spec = TASKS[task]
    flags = [f"--{split} {spec['splits'][split][0]} {spec['splits'][split][1]}" for split in ("train", "dev", "test")]
    flags.append(f"--linearization {spec.get('linearization', 'xx')}")
    if spec.get("silver"):
        flags.append(f"--silver {spec['silver']['path']} --silver-ratio {spec['silver']['ratio']}")
    return " ".join(flags)


def decode_flags(wildcards):
    opts = settings(wildcards)["decode"]
    flags = (
        f"--beam-size {opts['beam_size']} --length-penalty {opts['length_penalty']}"
        f" --max-len-a {opts['max_len_a']} --max-len-b {opts['max_len_b']}"
        f" --max-sentences {opts['max_sentences']} --precision {opts.get('precision', 'auto')}"
    )
    return flags + (" --early-stop" if opts["early_stop"] else " --no-early-stop")
