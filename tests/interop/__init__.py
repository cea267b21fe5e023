"""Against the pinned npm 1.0.0 peers, run by node."""
