"""What `sag-pg db status` adds on a Citus coordinator: its nodes with their shards and bytes, and where each
source lives (the worker and shard group holding it, and that group's bytes)."""

from __future__ import annotations

from typing import Any

import psycopg

from .distribute import ANCHOR, citus_version

_NODES = """
select n.nodename, n.nodeport, n.groupid, n.noderole::text, n.isactive, n.shouldhaveshards,
       coalesce(s.shards, 0), coalesce(s.bytes, 0)
  from pg_catalog.pg_dist_node n
  left join (select cs.nodename, cs.nodeport, count(*) as shards, sum(cs.shard_size) as bytes
               from pg_catalog.citus_shards cs
              where cs.table_name::text like 'sag.%%'
              group by 1, 2) s on s.nodename = n.nodename and s.nodeport = n.nodeport
 order by n.groupid, n.nodeport"""

# A source's shard group: the shard of sag.documents that holds its id, its placement, and the bytes of every
# co-located shard with the same hash range (the group holds other sources too).
_SOURCES = """
with placed as (
    select s.name, pg_catalog.get_shard_id_for_distribution_column(%(anchor)s, s.id) as shard
      from sag.sources s
), ranges as (
    select p.name, p.shard, sh.shardminvalue, sh.shardmaxvalue from placed p
      join pg_catalog.pg_dist_shard sh on sh.shardid = p.shard
)
select r.name, cs.nodename, cs.nodeport, r.shard,
       (select sum(x.shard_size) from pg_catalog.citus_shards x
          join pg_catalog.pg_dist_shard xs on xs.shardid = x.shardid
         where x.colocation_id = cs.colocation_id and xs.shardminvalue = r.shardminvalue) as bytes
  from ranges r join pg_catalog.citus_shards cs on cs.shardid = r.shard
 order by r.name"""


def distribution_status(conn: psycopg.Connection) -> dict[str, Any] | None:
    """Nodes, and each source's worker and shard group, on a Citus coordinator whose schema is distributed;
    None on one PostgreSQL (or before `db upgrade` distributed it)."""
    version = citus_version(conn)
    if version is None:
        return None
    distributed = conn.execute("select 1 from pg_catalog.pg_dist_partition where logicalrelid = "
                               "pg_catalog.to_regclass(%s)", [f"sag.{ANCHOR}"]).fetchone()
    nodes = [{"name": name, "port": port, "group": group, "role": role, "active": active,
              "has_shards": has_shards, "shards": int(shards), "bytes": int(size)}
             for name, port, group, role, active, has_shards, shards, size in conn.execute(_NODES).fetchall()]
    sources = []
    if distributed:
        sources = [{"source": name, "node": f"{host}:{port}", "shard": int(shard), "group_bytes": int(size or 0)}
                   for name, host, port, shard, size in
                   conn.execute(_SOURCES, {"anchor": f"sag.{ANCHOR}"}).fetchall()]
    return {"citus_version": version, "distributed": bool(distributed), "nodes": nodes, "sources": sources}
