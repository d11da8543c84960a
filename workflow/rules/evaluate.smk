# Beam decoding, detokenization, BLEU (of our runs and of the copy baseline), dev perplexity.


rule translate:
    input:
        checkpoint=checkpoint_file,
        spm=f"{D}/bpe/{{task}}/spm.model",
        src=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[0]}",
        settings=RUN.settings("decode"),
    output:
        RUN.hyp_tok("{split}", "{ckpt}"),
    log:
        RUN.log("translate", "{split}", "{ckpt}"),
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["decode"]
    resources:
        gpu=lambda w: min(1, gpus(w)),
    shell:
        "python -m aiayn.decode.translate --checkpoint {input.checkpoint:q} --spm {input.spm:q}"
        " --input {input.src:q} --output {output:q} --settings {input.settings:q} --threads {threads} --log {log:q}"


rule detokenize:
    input:
        hyp=TRUN.hyp_tok("{split}", "{ckpt}"),
        settings=lambda w: f"{D}/settings/{w.ttask}/tokenize.{sides(w.ttask)[1]}.json",
    output:
        TRUN.hyp_txt("{split}", "{ckpt}"),
    log:
        TRUN.log("detokenize", "{split}", "{ckpt}"),
    conda:
        "../../envs/aiayn.yaml"
    params:
        lang=lambda w: sides(w.ttask)[1],
    shell:
        "python -m aiayn.data.detokenize --lang {params.lang:q} --input {input.hyp:q} --settings {input.settings:q}"
        " --output {output:q} --log {log:q}"


# What aiayn-translate and aiayn-parse read of a run beyond its own directory (aiayn.decode.manifest).
rule inference_manifest:
    input:
        spm=f"{D}/bpe/{{task}}/spm.model",
        tokenize=lambda w: [f"{D}/settings/{w.task}/tokenize.{sides(w.task)[0]}.json"] if w.task in TRANSLATION else [],
    output:
        RUN.inference,
    log:
        RUN.log("inference_manifest"),
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    params:
        kind=lambda w: TASKS[w.task]["kind"],
        sides=lambda w: sides(w.task),
        tokenize=lambda w, input: f"--tokenize {shlex.quote(input.tokenize[0])}" if input.tokenize else "",
    shell:
        "python -m aiayn.decode.manifest --kind {params.kind:q} --source-lang {params.sides[0]:q}"
        " --target-lang {params.sides[1]:q} --spm {input.spm:q} {params.tokenize} --output {output:q} --log {log:q}"


# The copy baseline (kind "copy", run "baseline") scores the test source as the hypothesis.
rule bleu:
    input:
        hyp=hypothesis,
        ref=lambda w: raw_text(w.ttask, w.split, sides(w.ttask)[1]),
        settings=RESULTS.settings("bleu"),
    output:
        TSCORED.bleu("{split}", "{kind}"),
    log:
        TSCORED.log("bleu", "{split}", "{kind}"),
    wildcard_constraints:
        run=_alternatives([*RUNS, BASELINE]),
        kind="avg|last|copy",
    conda:
        "../../envs/aiayn.yaml"
    params:
        lang=lambda w: sides(w.ttask)[1],
    shell:
        "python -m aiayn.evaluate.bleu --hyp {input.hyp:q} --ref {input.ref:q} --lang {params.lang:q}"
        " --settings {input.settings:q} --output {output:q} > {log:q} 2>&1"


rule perplexity:
    input:
        checkpoint=RUN.train.last,
        dev=f"{D}/bin/{{task}}/dev/manifest.json",
        settings=RESULTS.settings("perplexity"),
    output:
        RUN.dev_ppl,
    log:
        RUN.log("ppl", "dev", "last"),
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["decode"]
    resources:
        gpu=lambda w: min(1, gpus(w)),
    params:
        data=lambda w: f"{D}/bin/{w.task}/dev",
    shell:
        "python -m aiayn.evaluate.perplexity --checkpoint {input.checkpoint:q} --data {params.data:q}"
        " --settings {input.settings:q} --output {output:q} --threads {threads} --log {log:q}"
