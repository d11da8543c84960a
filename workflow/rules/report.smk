# The paper's tables beside ours, and the plots.


rule tables:
    input:
        config=RESULTS.config,
        metrics=RECORDS.inputs(TABLES),
    output:
        [report(RESULTS.table(t, "html"), caption=f"../report/{t}.rst", category="Tables") for t in TABLES],
        [RESULTS.table(t, ext) for t in TABLES for ext in ("md", "csv", "tex")],
    log:
        RESULTS.log("tables"),
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    params:
        results=lambda w, input: os.path.dirname(input.config),
        out_dir=lambda w, output: os.path.dirname(output[0]),
        tables=TABLES,
    shell:
        "python -m aiayn.report.tables --config {input.config:q} --results-dir {params.results:q}"
        " --out-dir {params.out_dir:q} --tables {params.tables:q} --log {log:q}"


rule plots:
    input:
        config=RESULTS.config,
        tables=[RESULTS.table(t, "csv") for t in TABLES],
    output:
        report(
            directory(RESULTS.plots),
            patterns=["{name}.png"],
            caption="../report/plots.rst",
            category="Plots",
            labels={"figure": "{name}"},
        ),
    log:
        RESULTS.log("plots"),
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    params:
        results=lambda w, input: os.path.dirname(input.config),
        tables=TABLES,
    shell:
        "python -m aiayn.report.plots --config {input.config:q} --results-dir {params.results:q} --out-dir {output:q}"
        " --tables {params.tables:q} --log {log:q}"


# The paper's attention figures (Figures 3-5) from one trained model's encoder, when `figures` names a run.
if FIGURES:

    rule attention_figures:
        input:
            checkpoint=RESULTS.run(FIGURES["task"], FIGURES["experiment"]).checkpoint(FIGURES["checkpoint"]),
            spm=f"{D}/bpe/{FIGURES['task']}/spm.model",
            tokenize=f"{D}/settings/{FIGURES['task']}/tokenize.{FIGURES['lang']}.json",
            settings=RESULTS.settings("attention"),
        output:
            [
                report(
                    RESULTS.figure(n),
                    caption=f"../report/figure{n}.rst",
                    category="Figures",
                    labels={"figure": f"Figure {n}"},
                )
                for n in (3, 4, 5)
            ],
            summary=RESULTS.figures_summary,
        log:
            RESULTS.log("attention_figures"),
        localrule: True
        conda:
            "../../envs/aiayn.yaml"
        params:
            lang=FIGURES["lang"],
            out_dir=lambda w, output: os.path.dirname(output.summary),
        shell:
            "python -m aiayn.report.attention --checkpoint {input.checkpoint:q} --spm {input.spm:q}"
            " --lang {params.lang:q} --tokenize-settings {input.tokenize:q} --settings {input.settings:q}"
            " --out-dir {params.out_dir:q} --log {log:q}"
