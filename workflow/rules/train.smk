# Training (one rule, keyed by task and experiment) and checkpoint averaging.


rule train:
    input:
        train=f"{D}/bin/{{task}}/train/manifest.json",
        dev=f"{D}/bin/{{task}}/dev/manifest.json",
        settings=lambda w: settings_file(w, "train"),
    output:
        summary=f"{R}/{{task}}/{{exp}}/train/summary.json",
        last=f"{R}/{{task}}/{{exp}}/train/checkpoint_last.pt",
    params:
        settings=lambda w: json.dumps(train_settings(w), sort_keys=True),
        data=lambda w: f"{D}/bin/{w.task}",
        out_dir=lambda w: f"{R}/{w.task}/{w.exp}/train",
    threads: config["threads"]["train"]
    resources:
        gpu=lambda w: settings(w)["train"]["gpus"],
    log:
        f"{R}/{{task}}/{{exp}}/logs/train.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.train --data {params.data} --settings {params.settings:q}"
        " --out-dir {params.out_dir} --threads {threads} --log {log}"


rule average:
    input:
        summary=f"{R}/{{task}}/{{exp}}/train/summary.json",
        settings=lambda w: settings_file(w, "average"),
    output:
        f"{R}/{{task}}/{{exp}}/avg.pt",
    params:
        checkpoints=lambda w: f"{R}/{w.task}/{w.exp}/train/checkpoints",
        last=lambda w: settings(w)["average"]["last"],
    log:
        f"{R}/{{task}}/{{exp}}/logs/average.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.decode.average --checkpoint-dir {params.checkpoints} --last {params.last}"
        " --output {output} --log {log}"
