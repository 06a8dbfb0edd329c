"""Running the checks: run state, subject handles, scheduling (waves, rounds, batches, retests), the plan."""
