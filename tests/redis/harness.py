"""Real processes for the run store's tests and benchmarks: ``redis-server`` and
uvicorn replicas of tests/redis/app.py, each on a free loopback port.

Strategy: ``RedisServer`` runs the Debian ``redis-server`` binary in a temporary
directory (no config file, nothing shared with a system Redis), optionally with
an append-only file fsynced on every write, so ``restart()`` on the same port
shows what a persistent Redis keeps; ``kill()`` is SIGKILL. ``Replica`` runs
``uvicorn tests.redis.app:app`` pointed at a Redis URL; ``kill()`` is SIGKILL
(the producer's replica dying mid-run). The binary missing is an error naming
the package: the Makefile installs it (``make redis-server``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_cluster_port(taken: set[int]) -> int:
    """A free port p below 55536 whose cluster bus port, p + 10000, is free too, and
    neither of them in ``taken`` (ports given to nodes that may not have bound them
    yet: two nodes of one cluster once drew the same port)."""
    import random

    for _ in range(200):
        port = random.randint(20000, 45000)
        if {port - 10000, port, port + 10000} & taken:  # a node's port or its bus port
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError(
            "redis-server is not installed: `make redis-server` installs the Debian "
            "package (apt-get install redis-server)"
        )
    return found


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process on a loopback port, restartable on the same port."""

    def __init__(
        self, directory: Path, *, persistent: bool = False, binary: str | None = None
    ) -> None:
        self.directory = directory
        self.persistent = persistent
        self.binary = binary or redis_server_binary()
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes" if self.persistent else "no",
            "--appendfsync",
            "always",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if _ping(self.port):
                return self
            time.sleep(0.02)
        log = self.directory / "redis.log"
        raise RuntimeError(
            "redis-server did not start:\n" + (log.read_text() if log.exists() else "")
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        self.process = None

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, down: float = 0.0) -> None:
        """SIGKILL, stay down ``down`` seconds, start again on the same port."""
        self.kill()
        time.sleep(down)
        self.start()


class Replica:
    """``uvicorn tests.redis.app:app`` on a loopback port."""

    def __init__(self, redis_url: str, log: Path, **env: str) -> None:
        self.redis_url = redis_url
        self.log = log
        self.env = env
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> Replica:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "AGUI_REDIS_URL": self.redis_url, **self.env}
        for _attempt in range(3):  # the free port may be taken before uvicorn binds it
            self.port = free_port()
            with open(self.log, "ab") as out:
                self.process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "uvicorn",
                        "tests.redis.app:app",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.port),
                        "--log-level",
                        "warning",
                        "--no-access-log",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                        return self
                except httpx.TransportError:
                    time.sleep(0.05)
            self.stop()
        raise RuntimeError(f"the replica did not start:\n{self.log.read_text(errors='replace')}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the replica process so far (from /proc)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


class Balancer:
    """A round-robin TCP load balancer on a loopback port, in a thread of its own:
    each new connection goes to the next backend port; ``cut()`` closes every open
    connection (what a network switch or a proxy restart does to a stream)."""

    def __init__(self, backends: list[int]) -> None:
        import asyncio

        self.backends = backends
        self.port = 0
        self.connections = 0
        self._next = 0
        self._loop = asyncio.new_event_loop()
        self._writers: set[Any] = set()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Balancer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _serve(self) -> None:
        import asyncio

        asyncio.set_event_loop(self._loop)

        async def pipe(reader: Any, writer: Any) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        async def handle(reader: Any, writer: Any) -> None:
            backend = self.backends[self._next % len(self.backends)]
            self._next += 1
            self.connections += 1
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", backend)
            except OSError:
                writer.close()
                return
            self._writers |= {writer, up_writer}
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
            self._writers -= {writer, up_writer}

        async def main() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            async with server:
                await server.serve_forever()

        with contextlib.suppress(Exception, asyncio.CancelledError):
            self._loop.run_until_complete(main())

    def cut(self) -> None:
        def close_all() -> None:
            for writer in list(self._writers):
                transport = writer.transport
                transport.abort()

        self._loop.call_soon_threadsafe(close_all)

    def stop(self) -> None:
        def halt() -> None:
            for task in asyncio_all_tasks(self._loop):
                task.cancel()

        self._loop.call_soon_threadsafe(halt)
        self._thread.join(5)


def asyncio_all_tasks(loop: Any) -> set[Any]:
    import asyncio

    return asyncio.all_tasks(loop)


class RedisClusterNodes:
    """A Redis Cluster on loopback: ``masters`` masters and ``replicas`` replicas
    each (the same Debian ``redis-server``, ``--cluster-enabled yes``), joined by
    ``redis-cli --cluster create``. ``kill(port)`` is SIGKILL of one node (a
    master: its replica takes over after ``node_timeout`` ms)."""

    def __init__(
        self, directory: Path, *, masters: int = 3, replicas: int = 1, node_timeout: int = 1000
    ) -> None:
        self.directory = directory
        self.count = masters * (1 + replicas)
        self.replicas = replicas
        self.node_timeout = node_timeout
        self.ports: list[int] = []
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def start(self) -> RedisClusterNodes:
        try:
            return self._start()
        except BaseException:
            self.stop()  # no node left behind
            raise

    def _start(self) -> RedisClusterNodes:
        binary = redis_server_binary()
        for _ in range(self.count):
            port = free_cluster_port(set(self.ports))
            node_dir = self.directory / f"node-{port}"
            node_dir.mkdir()
            self.processes[port] = subprocess.Popen(
                [
                    binary,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(node_dir),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    str(self.node_timeout),
                    # a replica takes over however long ago it heard from its master
                    "--cluster-replica-validity-factor",
                    "0",
                    "--logfile",
                    str(node_dir / "redis.log"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
            self.ports.append(port)
        deadline = time.monotonic() + 10
        while not all(_ping(p) for p in self.ports):
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster's redis-server nodes did not start")
            time.sleep(0.05)
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("redis-cli is not installed: `make redis-server` installs it")
        subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            timeout=60,
        )
        self.wait_ok()
        return self

    def info(self, port: int, command: str = "CLUSTER INFO") -> str:
        out = subprocess.run(
            [shutil.which("redis-cli") or "redis-cli", "-p", str(port), *command.split()],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout

    def wait_ok(self, timeout: float = 30) -> None:
        """Until every live node says the cluster is ok and every live replica is
        in sync with its master."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [p for p, proc in self.processes.items() if proc.poll() is None]
            replication = [self.info(p, "INFO replication") for p in live]
            if all("cluster_state:ok" in self.info(p) for p in live) and all(
                "master_link_status:up" in r for r in replication if "role:slave" in r
            ):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not become ok:\n" + self.info(self.ports[0]))

    def live(self) -> int:
        """The port of a node that is running."""
        return next(p for p, proc in self.processes.items() if proc.poll() is None)

    def masters(self) -> list[int]:
        """Ports of the live masters."""
        out = []
        for line in self.info(self.live(), "CLUSTER NODES").splitlines():
            fields = line.split()
            if "master" in fields[2] and "fail" not in fields[2]:
                out.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
        return out

    def master_of(self, slot: int) -> int:
        """The port of the master serving ``slot``."""
        for line in self.info(self.live(), "CLUSTER NODES").splitlines():
            fields = line.split()
            if "master" not in fields[2] or "fail" in fields[2]:
                continue
            for part in fields[8:]:
                low, _, high = part.partition("-")
                if low.isdigit() and int(low) <= slot <= int(high or low):
                    return int(fields[1].split("@")[0].rsplit(":", 1)[1])
        raise KeyError(slot)

    def kill(self, port: int) -> None:
        process = self.processes[port]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
