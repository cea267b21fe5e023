"""The evolution drill: the schema grows in a scratch copy of the
tree, and every backend must carry the new fields and event type, byte for byte
alike, on the C path. Run by ``make evolution`` (not by ``make test``)."""
