"""MARO Grass: job deployment files, plans, placement, and the master and node agents over Redis."""
