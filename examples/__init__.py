"""Runnable examples: a FastAPI agent server (``server``), its scripted run
(``script``) and a command-line client (``client``)."""
