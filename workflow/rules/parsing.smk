# Constituency parsing (Table 4): treebank -> linearized pairs; decoded trees -> repaired trees.


rule treebank:
    input:
        treebank=lambda w: TASKS[w.ptask]["treebank"],
        settings=f"{D}/settings/{{ptask}}/treebank.json",
    output:
        [f"{D}/tok/{{ptask}}/{split}.{side}" for split in ("train", "dev", "test") for side in ("words", "tree")],
        [f"{D}/tok/{{ptask}}/{split}.gold" for split in ("dev", "test")],
        f"{D}/tok/{{ptask}}/train.symbols",
    log:
        f"{D}/logs/treebank/{{ptask}}.log",
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    params:
        out_dir=lambda w: f"{D}/tok/{w.ptask}",
    shell:
        "python -m aiayn.parsing.prepare --treebank {input.treebank:q} --out-dir {params.out_dir:q}"
        " --settings {input.settings:q} --log {log:q}"


rule trees:
    input:
        hyp=PRUN.hyp_tok("{split}", "{ckpt}"),
        words=f"{D}/tok/{{ptask}}/{{split}}.words",
        gold=f"{D}/tok/{{ptask}}/{{split}}.gold",
    output:
        PRUN.trees("{split}", "{ckpt}"),
    log:
        PRUN.log("trees", "{split}", "{ckpt}"),
    priority: 10
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.parsing.postprocess --hyp {input.hyp:q} --words {input.words:q} --gold {input.gold:q}"
        " --output {output:q} --log {log:q}"


rule flat_baseline:
    input:
        gold=f"{D}/tok/{{ptask}}/test.gold",
    output:
        RESULTS.run("{ptask}", BASELINE).trees("test", "flat"),
    log:
        RESULTS.run("{ptask}", BASELINE).log("trees", "test", "flat"),
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.parsing.baseline --gold {input.gold:q} --output {output:q} --log {log:q}"


rule evalb:
    input:
        gold=f"{D}/tok/{{ptask}}/{{split}}.gold",
        test=PSCORED.trees("{split}", "{kind}"),
    output:
        txt=PSCORED.evalb_txt("{split}", "{kind}"),
        json=PSCORED.evalb("{split}", "{kind}"),
    log:
        PSCORED.log("evalb", "{split}", "{kind}"),
    wildcard_constraints:
        run=_alternatives([*RUNS, BASELINE]),
        kind="avg|last|flat",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.evaluate.evalb {input.gold:q} {input.test:q} --out {output.txt:q}"
        " --json-out {output.json:q} --log {log:q}"
