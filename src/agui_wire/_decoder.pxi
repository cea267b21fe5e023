# Cython direct decoder: see proto_reader.py for the contract.
