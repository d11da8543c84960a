"""What every stage that runs a network shares: devices and GPU claims (:mod:`~aiayn.runtime.devices`),
numeric precision and CPU kernels (:mod:`~aiayn.runtime.precision`), checkpoint files
(:mod:`~aiayn.runtime.checkpoint`), token batches of binarized shards (:mod:`~aiayn.runtime.batches`),
the loss (:mod:`~aiayn.runtime.loss`) and the inference session that loads a checkpoint onto a device
(:mod:`~aiayn.runtime.session`).

Training, decoding and evaluation all sit above this package and import it; it imports none of them.
"""
