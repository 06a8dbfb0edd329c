"""The inventory's ``slurm: steps``: how a node's commands become job steps."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_fabric.transport.slurm import SlurmSection, SlurmSettings, settings_from


def test_a_run_uses_one_agent_step_per_node_unless_told_otherwise() -> None:
    assert settings_from(SlurmSection(partition="gpu"), None).steps == "agent"
    assert SlurmSettings().steps == "agent"
    assert settings_from(SlurmSection(steps="per-command"), None).steps == "per-command"


def test_an_unknown_way_of_making_steps_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValidationError, match="'agent' or 'per-command'"):
        SlurmSection(steps="one-big-step")  # type: ignore[arg-type]
