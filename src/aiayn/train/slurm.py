"""What a training job asks SLURM for, through snakemake-executor-plugin-slurm (resources, not flags).

Read in snakemake-executor-plugin-slurm 2.8.0 (``submit_string.py``, ``utils.py: set_gres_string``) and
snakemake-executor-plugin-slurm-jobstep 0.6.1 (``__init__.py``):

- without an ``mpi`` resource the job's command runs as ``srun -n1``: one process on one node;
- with ``mpi`` the jobstep runs the rule's shell command in the batch script as it is, so the command
  itself must start ``srun``; the submit string then needs ``tasks`` > 1 (``--ntasks``);
- ``gpu: N`` becomes ``--gpus=N`` for the whole job (SLURM may spread it unevenly over nodes), while
  ``gres: gpu:N`` asks for N on every node;
- a GPU job turns ``tasks`` into ``--ntasks-per-gpu`` unless ``tasks_per_gpu`` is given; a value below 1
  writes nothing;
- ``cpus_per_task`` becomes ``--cpus-per-task`` (else the rule's threads do);
- the jobstep runs that command with every ``SLURM_*`` variable removed but the allocation's identity
  (``SLURM_JOB_ID``, ``SLURM_SUBMIT_DIR``, ...: ``keep_slurm`` in its ``__init__.py``), so an ``srun``
  there no longer knows the allocation's node count and starts one task on one node: the launcher
  names ``--nodes`` and ``--ntasks`` itself.

A resource whose function returns None is left out of the job (Snakemake 9.27), so one node asks for
exactly what it asked for before: ``gpu: train.gpus`` and the rule's threads.
"""

from __future__ import annotations

SRUN_ONE_AGENT_PER_NODE = "srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 --kill-on-bad-exit=1"


def train_resources(train: dict, threads: int) -> dict:
    """Resources of a training job with ``train.gpus`` GPUs (0: CPU ranks) on each of ``train.nodes``.

    ``threads`` are the CPUs on each node; torchrun's ranks on a node share them.
    """
    nodes, gpus = int(train.get("nodes", 1)), int(train["gpus"])
    if nodes == 1:
        return {"gpu": gpus}
    res = {"nodes": nodes, "tasks": nodes, "mpi": "srun", "cpus_per_task": threads}
    if gpus:
        res |= {"gres": f"gpu:{gpus}", "tasks_per_gpu": 0}
    return res


def train_launcher(train: dict) -> str:
    """The prefix of the train rule's command: one torchrun agent on each of ``train.nodes`` nodes via
    srun, else nothing."""
    nodes = int(train.get("nodes", 1))
    return SRUN_ONE_AGENT_PER_NODE.format(nodes=nodes) if nodes > 1 else ""
