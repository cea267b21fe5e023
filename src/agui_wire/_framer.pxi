# Cython framer: see framing.py for the contract (filled in by the framer work).
