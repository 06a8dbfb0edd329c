"""The pytest session around a run: rootdir, garbage-collector pause, stopping, usage warnings, option conflicts."""
