"""A trained model leaves the project: CTranslate2 (:mod:`aiayn.export.ct2`) and Hugging Face
``transformers`` (:mod:`aiayn.export.hf`), with what a user needs to feed it (:mod:`aiayn.export.run`).

    aiayn-export --run results/<task>/<experiment> --to ctranslate2 DIR [--last]
    aiayn-export --run results/<task>/<experiment> --to huggingface DIR [--last]

Both engines take sentencepiece pieces; the Moses tokenization before them and the detokenization
after them happen outside both, as in the workflow: ``DIR/preprocessing.json`` says how
(``aiayn.export.run``), and ``DIR/spm.model`` is the task's sentencepiece model. The libraries are
optional extras (``pip install -e '.[export]'``).
"""
