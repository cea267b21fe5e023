# Cython direct encoder: see proto_writer.py for the contract.
