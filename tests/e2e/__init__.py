"""Real servers (uvicorn on loopback) and real clients."""
