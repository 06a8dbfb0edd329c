"""What users write, read as plain data: the inventory, the profile, their units and YAML sources.

Nothing here runs a command. The profile's schema is assembled from the registered checks'
settings models (``pytest_fabric.checks``).
"""
