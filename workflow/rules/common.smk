# The config, checked once when the Snakefile is parsed, and the functions that map a run to its files.
# Settings reach a stage only through its settings file (aiayn.runs.settings_files, rules/settings.smk).
# A rule's command quotes every path and name it is given ({input:q}; a list's items are formatted and quoted
# one by one, snakemake/snakemake at ead894bd, src/snakemake/utils.py, SequenceFormatter): data_dir and
# results_dir may hold spaces (tests/test_workflow.py::test_every_command_quotes_its_paths).
import json
import re
import shlex

from aiayn import config as aiayn_config
from aiayn import runs as aiayn_runs
from aiayn.train import slurm as train_slurm
from aiayn.data import sources as data_sources
from aiayn.options.sources import archive_name, is_archive, is_local, local_path
from aiayn.paths import BASELINE, ResultPaths
from aiayn.runtime import host as runtime_host
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

# An overlay's null deletes an entry (aiayn.config.prune); validation fills in the definitions' defaults
# (aiayn.config.validate). Snakemake's merged config is edited in place.
_valid = aiayn_config.validate(aiayn_config.prune(config), source="config (config.yaml plus --configfile overlays)")
config.clear()
config.update(_valid)

D = config["data_dir"]
R = config["results_dir"]
TASKS = config["tasks"]
SOURCES = config["sources"]
TRANSLATION = [t for t, spec in TASKS.items() if spec["kind"] == "translation"]
PARSING = [t for t, spec in TASKS.items() if spec["kind"] == "parsing"]
RECORDS = aiayn_runs.Records(config)  # every run, its settings resolved once, and its files
RESULTS = ResultPaths(R)
RUNS = aiayn_runs.run_names(RECORDS)  # run directories: experiments, then extra seeds (<exp>.seed<S>)
# The patterns of a run's files (aiayn.paths.RunPaths), by the wildcards that name its task and run.
RUN = RESULTS.run("{task}", "{exp}")
TRUN = RESULTS.run("{ttask}", "{exp}")
PRUN = RESULTS.run("{ptask}", "{exp}")
TSCORED = RESULTS.run("{ttask}", "{run}")  # a run or the task's baselines
PSCORED = RESULTS.run("{ptask}", "{run}")
ARCHIVE_CORPORA = [c for c, source in SOURCES.items() if is_archive(source)]
FILE_CORPORA = [c for c in SOURCES if c not in ARCHIVE_CORPORA]
# The archives some translation task reads (what the demo generates; a source no task names has none).
READ_ARCHIVES = data_sources.downloads(
    SOURCES,
    [
        c
        for c in ARCHIVE_CORPORA
        if any(c in (*TASKS[t]["train"], TASKS[t]["dev"], TASKS[t]["test"]) for t in TRANSLATION)
    ],
)
DOWNLOADS = data_sources.downloads(SOURCES)
# A translation task's training data passes tokenize, clean, encode and binarize in CHUNKS jobs each
# (data.chunks; rules/data.smk): the parts of a stage are PARTS, "I-N".
CHUNKS = config["data"]["chunks"]
PARTS = [f"{i}-{CHUNKS}" for i in range(CHUNKS)]
TRAIN_CORPORA = sorted({c for t in TRANSLATION for c in TASKS[t]["train"]})
SETTINGS = {
    path: json.dumps(value, sort_keys=True) for path, value in aiayn_runs.settings_files(config, RECORDS).items()
}


def _alternatives(names):
    return "|".join(re.escape(n) for n in names) or "(?!)"


wildcard_constraints:
    task=_alternatives(TASKS),
    ttask=_alternatives(TRANSLATION),
    ptask=_alternatives(PARSING),
    exp=_alternatives(RUNS),
    corpus=_alternatives(SOURCES),
    acorpus=_alternatives(ARCHIVE_CORPORA),
    fcorpus=_alternatives(FILE_CORPORA),
    download=_alternatives(DOWNLOADS),
    split="train|dev|test",
    ckpt="avg|last",
    lang="[a-z]{2}",
    side="[a-z]+",
    part=r"\d+-\d+",
    tcorpus=_alternatives(TRAIN_CORPORA),


def sides(task):
    spec = TASKS[task]
    return (spec["src"], spec["tgt"]) if spec["kind"] == "translation" else ("words", "tree")


def split_corpus(task, split):
    return TASKS[task][split]


def text(task, split, side):
    """Tokenized text of one side of a split: what BPE learns from and encodes."""
    if TASKS[task]["kind"] == "parsing":
        return f"{D}/tok/{task}/{split}.{side}"
    if split == "train":
        return f"{D}/clean/{task}/train.{side}"
    return f"{D}/tok/{task}/{split_corpus(task, split)}.{side}"


def raw_text(task, split, side):
    return f"{D}/raw/{task}/{split_corpus(task, split)}.{side}"


def local_copy(wildcards):
    """What a download reads when it is local, as its input: a local source file itself, or a local
    mirror's copy of a remote one (so that a rule that fills the mirror runs first)."""
    url, mirror = DOWNLOADS[wildcards.download], config["data"].get("mirror")
    if is_local(url):
        return [str(local_path(url))]
    return [f"{mirror}/{archive_name(url)}"] if mirror and "://" not in mirror else []


def run_train(wildcards):
    """A run's resolved train section (aiayn.runs.Records: resolved once per run)."""
    return RECORDS.get(wildcards.task, wildcards.exp).sections["train"]


def check_training_gpus(cluster):
    """At the start of a run of jobs: a training that asks for more GPUs than this machine's torch can use
    stops the workflow now, before its data jobs, where the jobs run here; on a cluster (``cluster``),
    whose submitting host may have none, it is a warning and each training job checks its node."""
    runs = {f"{t}/{e}": RECORDS.get(t, e).sections["train"]["gpus"] for t, e in aiayn_runs.runs(config)}
    problem = runtime_host.training_gpus_problem(runs)
    if problem and cluster:
        logger.warning(f"on this submitting host, {problem}")
    elif problem:
        raise WorkflowError(problem)


def gpus(wildcards):
    """GPUs of a run's training job; its decoding and scoring take one when training took any."""
    return run_train(wildcards)["gpus"]


def train_resource(name):
    """One resource of a run's training job (aiayn.train.slurm.train_resources); None leaves it out."""

    def value(wildcards, threads):
        return train_slurm.train_resources(run_train(wildcards), threads).get(name)

    return value


def train_launcher(wildcards):
    """``srun`` starting one torchrun agent per node when the run spans nodes, else nothing."""
    return train_slurm.train_launcher(run_train(wildcards))


def checkpoint_file(wildcards):
    """The checkpoint a decode reads: the run's averaged one (ckpt avg) or its last."""
    return RESULTS.run(wildcards.task, wildcards.exp).checkpoint(wildcards.ckpt)


def hypothesis(wildcards):
    """What BLEU scores: a run's detokenized output, or for the copy baseline the test source itself."""
    if wildcards.kind == "copy":
        return raw_text(wildcards.ttask, wildcards.split, sides(wildcards.ttask)[0])
    return RESULTS.run(wildcards.ttask, wildcards.run).hyp_txt(wildcards.split, wildcards.kind)


def _tables_requested():
    wanted = []
    for table in ("table2", "table3", "table4"):
        runs = aiayn_runs.runs(config, table)
        if not runs:
            continue
        missing = [t for t, _ in runs if TASKS[t]["kind"] == "parsing" and not TASKS[t]["treebank"]]
        if missing:
            logger.warning(
                f"{table} skipped: tasks.{missing[0]}.treebank is not set "
                "(point it at your licensed WSJ treebank, LDC99T42)"
            )
            continue
        wanted.append(table)
    return wanted + (["experiments"] if aiayn_runs.table_runs(config) else [])


TABLES = _tables_requested()
FIGURES = aiayn_runs.figures_run(config)  # the run the attention figures are drawn from, or None


def all_targets():
    targets = [RESULTS.table(t, ext) for t in TABLES for ext in ("md", "csv", "tex", "html")]
    figures = [RESULTS.figure(n) for n in (3, 4, 5)] if FIGURES else []
    manifests = [RESULTS.run(task, exp).inference for task, exp in aiayn_runs.table_runs(config)]
    return targets + [RESULTS.plots] + figures + manifests
