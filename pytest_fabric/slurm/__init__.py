"""The Slurm integration: what a run on Slurm nodes adds above the transport.

- :mod:`.allocation`: the run's one allocation, shared by every Slurm node
  (``pytest_fabric_make_transport`` asks it for a node's transport); it sizes the allocation's
  time limit from the run's plan and its GPUs from the profile;
- :mod:`.drain`: the ``scontrol update ... state=drain`` lines for failed nodes (a plugin:
  ``--slurm-drain``).

The transport itself (srun steps in an allocation, its settings) is
:mod:`pytest_fabric.transport.slurm`, which imports nothing from here.
"""
