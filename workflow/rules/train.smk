# Training (one rule, keyed by task and experiment) and checkpoint averaging.


# Before any job: a run that asks for more GPUs than this machine has (common.smk, check_training_gpus).
onstart:
    check_training_gpus(workflow.non_local_exec)


rule train:
    input:
        train=f"{D}/bin/{{task}}/train/manifest.json",
        dev=f"{D}/bin/{{task}}/dev/manifest.json",
        settings=RUN.settings("train"),
        aligned=lambda w: (
            [f"{D}/checks/{w.task}/{s}.aligned.json" for s in ("dev", "test")] if w.task in TRANSLATION else []
        ),
    output:
        summary=RUN.train.summary,
        last=RUN.train.last,
    log:
        RUN.log("train"),
    conda:
        "../../envs/aiayn.yaml"
    threads: config["threads"]["train"]
    resources:
        gpu=train_resource("gpu"),
        nodes=train_resource("nodes"),
        tasks=train_resource("tasks"),
        mpi=train_resource("mpi"),
        gres=train_resource("gres"),
        tasks_per_gpu=train_resource("tasks_per_gpu"),
        cpus_per_task=train_resource("cpus_per_task"),
    params:
        data=lambda w: f"{D}/bin/{w.task}",
        out_dir=lambda w: RESULTS.run(w.task, w.exp).train.dir,
        launch=train_launcher,
    shell:
        "{params.launch} python -m aiayn.train --data {params.data:q} --settings {input.settings:q}"
        " --out-dir {params.out_dir:q} --threads {threads} --log {log:q}"


rule average:
    input:
        summary=RUN.train.summary,
        settings=RUN.settings("average"),
    output:
        RUN.averaged,
    log:
        RUN.log("average"),
    conda:
        "../../envs/aiayn.yaml"
    params:
        train_dir=lambda w: RESULTS.run(w.task, w.exp).train.dir,
    shell:
        "python -m aiayn.decode.average --train-dir {params.train_dir:q} --settings {input.settings:q}"
        " --output {output:q} --log {log:q}"
