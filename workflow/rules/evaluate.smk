# Beam decoding, detokenization, BLEU, dev perplexity, and the trivial baselines printed beside ours.



rule translate:
    input:
        checkpoint=checkpoint,
        spm=f"{D}/bpe/{{task}}/spm.model",
        src=lambda w: f"{D}/bpe/{w.task}/{w.split}.{sides(w.task)[0]}",
        settings=lambda w: settings_file(w, "decode"),
    output:
        f"{R}/{{task}}/{{exp}}/{{split}}-{{ckpt}}.hyp.tok",
    params:
        flags=decode_flags,
    threads: config["threads"]["decode"]
    resources:
        gpu=lambda w: min(1, settings(w)["train"]["gpus"]),
    log:
        f"{R}/{{task}}/{{exp}}/logs/{{split}}-{{ckpt}}.translate.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.decode.translate --checkpoint {input.checkpoint} --spm {input.spm}"
        " --input {input.src} --output {output} {params.flags} --threads {threads} --log {log}"


rule detokenize:
    input:
        f"{R}/{{ttask}}/{{exp}}/{{split}}-{{ckpt}}.hyp.tok",
    output:
        f"{R}/{{ttask}}/{{exp}}/{{split}}-{{ckpt}}.hyp.txt",
    params:
        lang=lambda w: sides(w.ttask)[1],
    log:
        f"{R}/{{ttask}}/{{exp}}/logs/{{split}}-{{ckpt}}.detokenize.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.data.detokenize --lang {params.lang} --input {input} --output {output} --log {log}"


rule bleu:
    input:
        hyp=f"{R}/{{ttask}}/{{exp}}/{{split}}-{{ckpt}}.hyp.txt",
        ref=lambda w: raw_reference(w.ttask, w.split),
    output:
        f"{R}/{{ttask}}/{{exp}}/{{split}}-{{ckpt}}.bleu.json",
    params:
        lang=lambda w: sides(w.ttask)[1],
    log:
        f"{R}/{{ttask}}/{{exp}}/logs/{{split}}-{{ckpt}}.bleu.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.evaluate.bleu --hyp {input.hyp} --ref {input.ref} --lang {params.lang}"
        " --output {output} > {log} 2>&1"


rule copy_baseline:
    input:
        hyp=lambda w: f"{D}/raw/{w.ttask}/{split_corpus(w.ttask, 'test')}.{sides(w.ttask)[0]}",
        ref=lambda w: raw_reference(w.ttask, "test"),
    output:
        f"{R}/{{ttask}}/baseline/test-copy.bleu.json",
    params:
        lang=lambda w: sides(w.ttask)[1],
    log:
        f"{R}/{{ttask}}/baseline/logs/test-copy.bleu.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.evaluate.bleu --hyp {input.hyp} --ref {input.ref} --lang {params.lang}"
        " --output {output} > {log} 2>&1"


rule perplexity:
    input:
        checkpoint=f"{R}/{{task}}/{{exp}}/train/checkpoint_last.pt",
        dev=f"{D}/bin/{{task}}/dev/manifest.json",
    output:
        f"{R}/{{task}}/{{exp}}/dev-last.ppl.json",
    params:
        data=lambda w: f"{D}/bin/{w.task}/dev",
    threads: config["threads"]["decode"]
    resources:
        gpu=lambda w: min(1, settings(w)["train"]["gpus"]),
    log:
        f"{R}/{{task}}/{{exp}}/logs/dev-last.ppl.log",
    conda:
        "../../envs/aiayn.yaml"
    shell:
        "python -m aiayn.evaluate.perplexity --checkpoint {input.checkpoint} --data {params.data}"
        " --output {output} --threads {threads} --log {log}"
