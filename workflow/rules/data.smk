# Data stages: download -> extract -> normalize/tokenize -> clean -> shared BPE -> encode -> shards.
# They carry priority 10 (trainings and the rest 0): when both are ready the scheduler starts data
# stages first, so every task's data is ready early and its trainings can fill the cores or GPUs
# (without it, trainings of the first task whose data is ready can go ahead of other tasks' data).
# The treebank rules of parsing.smk carry it too. Each job's wall and CPU time and peak memory (its
# processes together, sampled) go to D/benchmarks/, beside its log (benchmarks/wmt_scale.py reads them).


# The demo (configs/demo.yaml) generates its archives, their lock and a treebank where its config points
# data.mirror, data.lock and tasks.<parsing task>.treebank; every other rule reads them as it would real
# data. The generator reads the run's config only for the sources and the translation tasks' corpora:
# the config is ancient here, so that other changes leave the data alone, and params.read holds those
# parts, so that changing them makes new data.
if "demo" in config:
    _mirror = config["data"]["mirror"]
    for _key, _path, _where in [
        ("data.lock", config["data"]["lock"], f"{_mirror}/sources.lock"),
        *[(f"tasks.{t}.treebank", TASKS[t]["treebank"], f"{_mirror}/treebank") for t in PARSING],
    ]:
        if _path != _where:
            raise ValueError(f"demo: {_key} must be {_where} (where the demo writes it), not {_path}")

    rule demo_mirror:
        input:
            config=ancient(RESULTS.config),
        output:
            archives=[f"{_mirror}/{name}" for name in READ_ARCHIVES],
            lock=f"{_mirror}/sources.lock",
            treebank=directory(f"{_mirror}/treebank"),
        log:
            f"{D}/logs/demo_mirror.log",
        localrule: True
        conda:
            "../../envs/aiayn.yaml"
        params:
            out_dir=lambda w, output: os.path.dirname(output.lock),
            demo=config["demo"],
            read=json.dumps(
                [SOURCES, [[TASKS[t][k] for k in ("src", "tgt", "train", "dev", "test")] for t in TRANSLATION]]
            ),
        shell:
            "python -m aiayn.demo.mirror --config {input.config:q} --out-dir {params.out_dir:q}"
            " --seed {params.demo[seed]} --train-pairs {params.demo[train_pairs]} --eval-pairs {params.demo[eval_pairs]}"
            " --trees {params.demo[trees]} --log {log:q}"


# An archive, or one side of a plain-file source (D/downloads/<corpus>/<lang>/<file name>).
rule download:
    input:
        settings=f"{D}/settings/download.json",
        local_copy=local_copy,
        lock=config["data"].get("lock") or [],
    output:
        f"{D}/downloads/{{download}}",
    log:
        f"{D}/logs/download/{{download}}.log",
    benchmark:
        f"{D}/benchmarks/download/{{download}}.tsv"
    retries: 2
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    params:
        url=lambda w: DOWNLOADS[w.download],
    shell:
        "python -m aiayn.data.download --url {params.url:q} --out {output:q} --settings {input.settings:q}"
        " --log {log:q}"


rule extract:
    input:
        archive=lambda w: f"{D}/downloads/{data_sources.download_path(SOURCES, w.acorpus, w.lang)}",
    output:
        f"{D}/raw/{{ttask}}/{{acorpus}}.{{lang}}",
    log:
        f"{D}/logs/extract/{{ttask}}/{{acorpus}}.{{lang}}.log",
    benchmark:
        f"{D}/benchmarks/extract/{{ttask}}/{{acorpus}}.{{lang}}.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    params:
        member=lambda w: SOURCES[w.acorpus]["members"][w.ttask][w.lang],
    shell:
        "python -m aiayn.data.extract --archive {input.archive:q} --member {params.member:q} --out {output:q}"
        " --log {log:q}"


# A plain-file source (sources.<corpus>.files): one file per side, decompressed and converted to text.
rule convert:
    input:
        lambda w: f"{D}/downloads/{data_sources.download_path(SOURCES, w.fcorpus, w.lang)}",
    output:
        f"{D}/raw/{{ttask}}/{{fcorpus}}.{{lang}}",
    log:
        f"{D}/logs/extract/{{ttask}}/{{fcorpus}}.{{lang}}.log",
    benchmark:
        f"{D}/benchmarks/extract/{{ttask}}/{{fcorpus}}.{{lang}}.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.extract --file {input:q} --out {output:q} --log {log:q}"


rule tokenize:
    input:
        text=f"{D}/raw/{{ttask}}/{{corpus}}.{{lang}}",
        settings=f"{D}/settings/{{ttask}}/tokenize.{{lang}}.json",
    output:
        f"{D}/tok/{{ttask}}/{{corpus}}.{{lang}}",
    log:
        f"{D}/logs/tokenize/{{ttask}}/{{corpus}}.{{lang}}.log",
    benchmark:
        f"{D}/benchmarks/tokenize/{{ttask}}/{{corpus}}.{{lang}}.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["data"]
    shell:
        "python -m aiayn.data.tokenize --lang {wildcards.lang:q} --input {input.text:q} --output {output:q}"
        " --settings {input.settings:q} --threads {threads} --log {log:q}"


# The two sides of a translation task's dev and test sets must have as many lines: checked once they are
# extracted, and every training of the task waits for the checks (train.smk), so a mismatch stops the
# workflow before any training rather than at its BLEU job.
rule aligned:
    input:
        src=lambda w: raw_text(w.ttask, w.split, sides(w.ttask)[0]),
        tgt=lambda w: raw_text(w.ttask, w.split, sides(w.ttask)[1]),
    output:
        f"{D}/checks/{{ttask}}/{{split}}.aligned.json",
    log:
        f"{D}/logs/aligned/{{ttask}}.{{split}}.log",
    wildcard_constraints:
        split="dev|test",
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.aligned --inputs {input.src:q} {input.tgt:q} --output {output:q} --log {log:q}"


# One clean rule per translation task: its two outputs are named by the task's languages.
for _task in TRANSLATION:
    _src, _tgt = sides(_task)

    rule:
        name:
            f"clean_{_task.replace('-', '_')}"
        input:
            texts=[f"{D}/tok/{_task}/{c}.{l}" for c in TASKS[_task]["train"] for l in (_src, _tgt)],
            settings=f"{D}/settings/clean.json",
        output:
            src=f"{D}/clean/{_task}/train.{_src}",
            tgt=f"{D}/clean/{_task}/train.{_tgt}",
            stats=f"{D}/clean/{_task}/train.stats.json",
        log:
            f"{D}/logs/clean/{_task}.log",
        benchmark:
            f"{D}/benchmarks/clean/{_task}.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        params:
            src=_src,
            tgt=_tgt,
            corpora=[f"{D}/tok/{_task}/{c}" for c in TASKS[_task]["train"]],
            prefix=lambda w, output: output.stats.removesuffix(".stats.json"),
        shell:
            "python -m aiayn.data.clean --src-lang {params.src:q} --tgt-lang {params.tgt:q}"
            " --corpora {params.corpora:q} --out-prefix {params.prefix:q} --stats {output.stats:q}"
            " --settings {input.settings:q} --log {log:q}"


# A parsing task's bracket tokens ((NP, )NP) stay whole pieces: its treebank rule lists them.
rule bpe_learn:
    input:
        texts=lambda w: [text(w.task, "train", side) for side in sides(w.task)],
        settings=f"{D}/settings/{{task}}/bpe.json",
        symbols=lambda w: [f"{D}/tok/{w.task}/train.symbols"] if w.task in PARSING else [],
    output:
        model=f"{D}/bpe/{{task}}/spm.model",
        vocab=f"{D}/bpe/{{task}}/spm.vocab",
    log:
        f"{D}/logs/bpe/{{task}}.learn.log",
    benchmark:
        f"{D}/benchmarks/bpe/{{task}}.learn.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["data"]
    params:
        prefix=lambda w: f"{D}/bpe/{w.task}/spm",
    shell:
        "python -m aiayn.data.bpe learn --inputs {input.texts:q} --model-prefix {params.prefix:q}"
        " --settings {input.settings:q} --symbols {input.symbols:q} --threads {threads} --log {log:q}"


rule bpe_encode:
    input:
        model=f"{D}/bpe/{{task}}/spm.model",
        text=lambda w: text(w.task, w.split, w.side),
    output:
        f"{D}/bpe/{{task}}/{{split}}.{{side}}",
    log:
        f"{D}/logs/bpe/{{task}}.{{split}}.{{side}}.encode.log",
    benchmark:
        f"{D}/benchmarks/bpe/{{task}}.{{split}}.{{side}}.encode.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["data"]
    shell:
        "python -m aiayn.data.bpe encode --model {input.model:q} --input {input.text:q} --output {output:q}"
        " --threads {threads} --log {log:q}"


rule binarize:
    input:
        model=f"{D}/bpe/{{task}}/spm.model",
        src=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[0]}",
        tgt=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[1]}",
        settings=f"{D}/settings/shards.json",
    output:
        f"{D}/bin/{{task}}/{{split}}/manifest.json",
    log:
        f"{D}/logs/binarize/{{task}}.{{split}}.log",
    benchmark:
        f"{D}/benchmarks/binarize/{{task}}.{{split}}.tsv"
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["data"]
    params:
        out_dir=lambda w: f"{D}/bin/{w.task}/{w.split}",
    shell:
        "python -m aiayn.data.binarize --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q}"
        " --out-dir {params.out_dir:q} --settings {input.settings:q} --threads {threads} --log {log:q}"


# A translation task's training data in CHUNKS parts (data.chunks; common.smk): tokenize, clean, encode
# and binarize each run as CHUNKS jobs, part I-N reading the I-th of N ranges of its input's lines
# (aiayn.data.lines.part_range), and a gather job joins the parts into the file the rule above makes
# in one job, byte for byte (aiayn.data.parts; tests/test_workflow_parts.py). A part's output is
# temporary: it goes once the gather is done. A failed part reruns alone.
if CHUNKS > 1:

    rule tokenize_part:
        input:
            text=f"{D}/raw/{{ttask}}/{{tcorpus}}.{{lang}}",
            settings=f"{D}/settings/{{ttask}}/tokenize.{{lang}}.json",
        output:
            temp(f"{D}/parts/tok/{{ttask}}/{{tcorpus}}.{{lang}}.{{part}}"),
        log:
            f"{D}/logs/tokenize/{{ttask}}/{{tcorpus}}.{{lang}}.{{part}}.log",
        benchmark:
            f"{D}/benchmarks/tokenize/{{ttask}}/{{tcorpus}}.{{lang}}.{{part}}.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        threads: config["threads"]["data"]
        shell:
            "python -m aiayn.data.tokenize --lang {wildcards.lang:q} --input {input.text:q} --output {output:q}"
            " --part {wildcards.part} --settings {input.settings:q} --threads {threads} --log {log:q}"

    rule tokenize_gather:
        input:
            lambda w: [f"{D}/parts/tok/{w.ttask}/{w.tcorpus}.{w.lang}.{part}" for part in PARTS],
        output:
            f"{D}/tok/{{ttask}}/{{tcorpus}}.{{lang}}",
        log:
            f"{D}/logs/tokenize/{{ttask}}/{{tcorpus}}.{{lang}}.log",
        benchmark:
            f"{D}/benchmarks/tokenize/{{ttask}}/{{tcorpus}}.{{lang}}.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        shell:
            "python -m aiayn.data.parts --inputs {input:q} --output {output:q} --log {log:q}"

    ruleorder: tokenize_gather > tokenize

    # Part I cleans range I of every corpus of the task into a folder of its own.
    for _task in TRANSLATION:
        _src, _tgt = sides(_task)
        _name = f"clean_{_task.replace('-', '_')}"

        rule:
            name:
                f"{_name}_part"
            input:
                texts=[f"{D}/tok/{_task}/{c}.{l}" for c in TASKS[_task]["train"] for l in (_src, _tgt)],
                settings=f"{D}/settings/clean.json",
            output:
                temp(directory(f"{D}/parts/clean/{_task}/{{part}}")),
            log:
                f"{D}/logs/clean/{_task}.{{part}}.log",
            benchmark:
                f"{D}/benchmarks/clean/{_task}.{{part}}.tsv"
            priority: 10
            conda:
                "../../envs/aiayn.yaml"
            params:
                src=_src,
                tgt=_tgt,
                corpora=[f"{D}/tok/{_task}/{c}" for c in TASKS[_task]["train"]],
            shell:
                "python -m aiayn.data.clean --src-lang {params.src:q} --tgt-lang {params.tgt:q}"
                " --corpora {params.corpora:q} --part {wildcards.part} --part-dir {output:q}"
                " --stats {output:q}/stats.json --settings {input.settings:q} --log {log:q}"

        rule:
            name:
                f"{_name}_gather"
            input:
                parts=[f"{D}/parts/clean/{_task}/{part}" for part in PARTS],
                settings=f"{D}/settings/clean.json",
            output:
                src=f"{D}/clean/{_task}/train.{_src}",
                tgt=f"{D}/clean/{_task}/train.{_tgt}",
                stats=f"{D}/clean/{_task}/train.stats.json",
            log:
                f"{D}/logs/clean/{_task}.log",
            benchmark:
                f"{D}/benchmarks/clean/{_task}.tsv"
            priority: 10
            conda:
                "../../envs/aiayn.yaml"
            params:
                src=_src,
                tgt=_tgt,
                corpora=[f"{D}/tok/{_task}/{c}" for c in TASKS[_task]["train"]],
                prefix=lambda w, output: output.stats.removesuffix(".stats.json"),
            shell:
                "python -m aiayn.data.clean --src-lang {params.src:q} --tgt-lang {params.tgt:q}"
                " --corpora {params.corpora:q} --gather {input.parts:q} --out-prefix {params.prefix:q}"
                " --stats {output.stats:q} --settings {input.settings:q} --log {log:q}"

        workflow.ruleorder(f"{_name}_gather", _name)

    rule bpe_encode_part:
        input:
            model=f"{D}/bpe/{{ttask}}/spm.model",
            text=lambda w: text(w.ttask, "train", w.side),
        output:
            temp(f"{D}/parts/bpe/{{ttask}}/train.{{side}}.{{part}}"),
        log:
            f"{D}/logs/bpe/{{ttask}}.train.{{side}}.{{part}}.encode.log",
        benchmark:
            f"{D}/benchmarks/bpe/{{ttask}}.train.{{side}}.{{part}}.encode.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        threads: config["threads"]["data"]
        shell:
            "python -m aiayn.data.bpe encode --model {input.model:q} --input {input.text:q} --output {output:q}"
            " --part {wildcards.part} --threads {threads} --log {log:q}"

    rule bpe_encode_gather:
        input:
            lambda w: [f"{D}/parts/bpe/{w.ttask}/train.{w.side}.{part}" for part in PARTS],
        output:
            f"{D}/bpe/{{ttask}}/train.{{side}}",
        log:
            f"{D}/logs/bpe/{{ttask}}.train.{{side}}.encode.log",
        benchmark:
            f"{D}/benchmarks/bpe/{{ttask}}.train.{{side}}.encode.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        shell:
            "python -m aiayn.data.parts --inputs {input:q} --output {output:q} --log {log:q}"

    ruleorder: bpe_encode_gather > bpe_encode

    rule binarize_part:
        input:
            model=f"{D}/bpe/{{ttask}}/spm.model",
            src=lambda w: f"{D}/bpe/{w.ttask}/train.{sides(w.ttask)[0]}",
            tgt=lambda w: f"{D}/bpe/{w.ttask}/train.{sides(w.ttask)[1]}",
            settings=f"{D}/settings/shards.json",
        output:
            temp(directory(f"{D}/parts/bin/{{ttask}}/train.{{part}}")),
        log:
            f"{D}/logs/binarize/{{ttask}}.train.{{part}}.log",
        benchmark:
            f"{D}/benchmarks/binarize/{{ttask}}.train.{{part}}.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        threads: config["threads"]["data"]
        shell:
            "python -m aiayn.data.binarize --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q}"
            " --part {wildcards.part} --out-dir {output:q} --settings {input.settings:q} --threads {threads}"
            " --log {log:q}"

    rule binarize_gather:
        input:
            model=f"{D}/bpe/{{ttask}}/spm.model",
            src=lambda w: f"{D}/bpe/{w.ttask}/train.{sides(w.ttask)[0]}",
            tgt=lambda w: f"{D}/bpe/{w.ttask}/train.{sides(w.ttask)[1]}",
            parts=lambda w: [f"{D}/parts/bin/{w.ttask}/train.{part}" for part in PARTS],
            settings=f"{D}/settings/shards.json",
        output:
            f"{D}/bin/{{ttask}}/train/manifest.json",
        log:
            f"{D}/logs/binarize/{{ttask}}.train.log",
        benchmark:
            f"{D}/benchmarks/binarize/{{ttask}}.train.tsv"
        priority: 10
        conda:
            "../../envs/aiayn.yaml"
        params:
            out_dir=lambda w: f"{D}/bin/{w.ttask}/train",
        shell:
            "python -m aiayn.data.binarize --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q}"
            " --gather {input.parts:q} --out-dir {params.out_dir:q} --settings {input.settings:q} --log {log:q}"

    ruleorder: binarize_gather > binarize
