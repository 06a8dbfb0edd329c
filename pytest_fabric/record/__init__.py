"""What a run recorded: the per-check record and what the run was about."""
