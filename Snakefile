# "Attention Is All You Need" (Vaswani et al., 2017), end to end.
#   snakemake --cores all                                   the paper's setup (config.yaml)
#   snakemake --cores all --configfile configs/demo.yaml    the embedded demo, offline, on a CPU
# Stages and the files between them: docs/ARCHITECTURE.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/settings.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/parsing.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
