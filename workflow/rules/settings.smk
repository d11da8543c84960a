# Each stage's settings file, written from its part of the config (aiayn.runs.settings_files). The content
# is the rule's parameter, so Snakemake reruns this rule when the content changes, and then exactly the
# jobs that read the file; nothing is written when the Snakefile is parsed.


rule settings:
    output:
        "{settings_file}",
    log:
        "{settings_file}.log",
    wildcard_constraints:
        settings_file=_alternatives(SETTINGS),
    localrule: True
    conda:
        "../../envs/aiayn.yaml"
    params:
        content=lambda w: SETTINGS[w.settings_file],
    shell:
        "python -m aiayn.settings --json {params.content:q} --output {output:q} --log {log:q}"
