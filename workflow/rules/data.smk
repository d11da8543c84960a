# Data stages: download -> extract -> normalize/tokenize -> clean -> shared BPE -> encode -> shards.


# The generator reads the run's config only for `sources`, which is a parameter here: another config
# change rewrites config.yaml but must not regenerate the data (and so rerun everything).
rule demo_corpus:
    input:
        config=ancient(f"{R}/config.yaml"),
        settings=f"{D}/settings/demo.json",
    output:
        archives=[f"{DEMO_MIRROR}/{name}" for name in ARCHIVE_URLS],
        lock=f"{DEMO_MIRROR}/sources.lock",
        treebank=directory(f"{DEMO_MIRROR}/treebank"),
    params:
        out_dir=lambda w, output: os.path.dirname(output.lock),
        seed=config.get("demo", {}).get("seed", 1),
        sizes=lambda w: " ".join(
            f"--{key.replace('_', '-')} {value}"
            for key, value in config.get("demo", {}).items()
            if key != "seed"
        ),
    log:
        f"{D}/logs/demo_corpus.log",
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.demo --config {input.config} --out-dir {params.out_dir} --seed {params.seed}"
        " {params.sizes} --log {log}"


rule download:
    input:
        mirror=lambda w: [f"{DEMO_MIRROR}/{w.archive}", f"{DEMO_MIRROR}/sources.lock"] if "demo" in config else [],
        settings=f"{D}/settings/sources.json",
    output:
        f"{D}/downloads/{{archive}}",
    params:
        url=lambda w: ARCHIVE_URLS[w.archive],
        mirror=lambda w: f"--mirror {mirror()}" if mirror() else "",
        lock=lambda w: f"--lock {lock_file()}" if lock_file() else "",
    log:
        f"{D}/logs/download/{{archive}}.log",
    localrule: True
    retries: 2
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.download --url {params.url} --out {output} {params.mirror} {params.lock} --log {log}"


rule extract:
    input:
        archive=lambda w: f"{D}/downloads/{archive_name(w.corpus)}",
        settings=f"{D}/settings/sources.json",
    output:
        f"{D}/raw/{{ttask}}/{{corpus}}.{{lang}}",
    params:
        member=lambda w: SOURCES[w.corpus]["members"][w.ttask][w.lang],
    log:
        f"{D}/logs/extract/{{ttask}}/{{corpus}}.{{lang}}.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.extract --archive {input.archive} --member {params.member} --out {output} --log {log}"



rule tokenize:
    input:
        text=f"{D}/raw/{{ttask}}/{{corpus}}.{{lang}}",
        settings=f"{D}/settings/tokenize.json",
    output:
        f"{D}/tok/{{ttask}}/{{corpus}}.{{lang}}",
    params:
        flags=tokenize_flags,
    threads: config["threads"]["data"]
    log:
        f"{D}/logs/tokenize/{{ttask}}/{{corpus}}.{{lang}}.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.tokenize --lang {wildcards.lang} --input {input.text} --output {output}"
        " --threads {threads} {params.flags} --log {log}"



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
        params:
            src=_src,
            tgt=_tgt,
            corpora=" ".join(f"{D}/tok/{_task}/{c}" for c in TASKS[_task]["train"]),
            prefix=lambda w, output: os.path.splitext(output.stats)[0].removesuffix(".stats"),
            flags=clean_flags(),
        log:
            f"{D}/logs/clean/{_task}.log",
        conda:
            "../../envs/aiayn.yaml"
        shell:
            "python -m aiayn.data.clean --src-lang {params.src} --tgt-lang {params.tgt}"
            " --corpora {params.corpora} --out-prefix {params.prefix} --stats {output.stats}"
            " {params.flags} --log {log}"


rule bpe_learn:
    input:
        texts=lambda w: [text(w.task, "train", side) for side in sides(w.task)],
        settings=f"{D}/settings/{{task}}/bpe.json",
    output:
        model=f"{D}/bpe/{{task}}/spm.model",
        vocab=f"{D}/bpe/{{task}}/spm.vocab",
    params:
        prefix=lambda w, output: os.path.splitext(output.model)[0],
        vocab_size=lambda w: aiayn_config.vocab_size(TASKS[w.task]),
        opts=lambda w: (
            f"--model-type {config['data']['bpe']['model_type']}"
            f" --character-coverage {config['data']['bpe']['character_coverage']}"
            f" --sample-sentences {config['data']['bpe']['sample_sentences']}"
            f" --seed {config['data']['bpe']['seed']}"
        ),
    threads: config["threads"]["data"]
    log:
        f"{D}/logs/bpe/{{task}}.learn.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.bpe learn --inputs {input.texts} --model-prefix {params.prefix}"
        " --vocab-size {params.vocab_size} {params.opts} --threads {threads} --log {log}"


rule bpe_encode:
    input:
        model=f"{D}/bpe/{{task}}/spm.model",
        text=lambda w: text(w.task, w.split, w.side),
    output:
        f"{D}/bpe/{{task}}/{{split}}.{{side}}",
    threads: config["threads"]["data"]
    log:
        f"{D}/logs/bpe/{{task}}.{{split}}.{{side}}.encode.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.bpe encode --model {input.model} --input {input.text} --output {output}"
        " --threads {threads} --log {log}"


rule binarize:
    input:
        model=f"{D}/bpe/{{task}}/spm.model",
        src=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[0]}",
        tgt=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[1]}",
        settings=f"{D}/settings/shards.json",
    output:
        f"{D}/bin/{{task}}/{{split}}/manifest.json",
    params:
        out_dir=lambda w, output: os.path.dirname(output[0]),
        max_shard_mb=config["data"]["shards"]["max_shard_mb"],
    threads: config["threads"]["data"]
    log:
        f"{D}/logs/binarize/{{task}}.{{split}}.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.binarize --model {input.model} --src {input.src} --tgt {input.tgt}"
        " --out-dir {params.out_dir} --max-shard-mb {params.max_shard_mb} --threads {threads} --log {log}"
