"""Export a clustering: GraphML (networkx, for Gephi/Cytoscape) or a PNG picture (matplotlib, optional).

GraphML nodes are event ids with ``cluster`` (ordinal), ``cluster_title`` and ``label`` (the event's title);
edges carry ``weight`` (the fused weight) and the terms it came from (``w_key``, ``key``, ``sim``).

The PNG places each cluster on a sunflower spiral (largest in the middle, area proportional to size) and
its events on a small spiral inside it: an O(n) layout that needs neither scipy nor a force simulation, so
it works for 50,000 events.  Only the ``max_edges`` heaviest edges are drawn.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx

from ..errors import ConfigError

if TYPE_CHECKING:
    from .run import ClusterResult

__all__ = ["export_graph", "require_matplotlib", "write_graphml", "write_png"]

_GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))


def export_graph(result: ClusterResult) -> nx.Graph:
    """A copy of the result's graph with the attributes GraphML keeps (no None values)."""
    graph = result.graph.copy()
    titles = {c.ordinal: c.title for c in result.clusters}
    for node, data in graph.nodes(data=True):
        data.setdefault("cluster", -1)
        data.setdefault("label", "")
        data["cluster_title"] = titles.get(data["cluster"], "")
    terms = result.pairs.as_dict() if len(result.pairs) <= 2_000_000 else {}
    for a, b, data in graph.edges(data=True):
        found = terms.get((a, b) if a < b else (b, a))
        if found is not None:
            data["w_key"], data["key"], data["sim"] = found[0], found[1], found[2]
    meta = {"run_id": result.run_id, "modularity": result.modularity, "event_count": result.event_count,
            "cluster_count": len(result.clusters), "alpha": result.params.alpha,
            "edge_threshold": result.params.edge_threshold, "use_idf": result.params.use_idf}
    graph.graph.update({k: v for k, v in meta.items() if v is not None})
    return graph


def write_graphml(result: ClusterResult, path: str | Path) -> Path:
    """Write the clustering graph as GraphML; returns the path."""
    target = Path(path)
    nx.write_graphml(export_graph(result), target, encoding="utf-8")
    return target


def _layout(result: ClusterResult) -> dict[int, tuple[float, float]]:
    positions: dict[int, tuple[float, float]] = {}
    spread = 0.0
    for i, cluster in enumerate(result.clusters):
        # Cluster centres on a spiral whose radius grows with the area already used.
        spread += cluster.size
        radius = math.sqrt(spread) * 1.6 if i else 0.0
        cx, cy = radius * math.cos(i * _GOLDEN_ANGLE), radius * math.sin(i * _GOLDEN_ANGLE)
        for j, event in enumerate(cluster.event_ids):
            r = 0.5 * math.sqrt(j + 0.5)
            positions[event] = (cx + r * math.cos(j * _GOLDEN_ANGLE), cy + r * math.sin(j * _GOLDEN_ANGLE))
    return positions


# Titles are often Chinese: the first of these that is installed draws them.
_FONTS = ["Noto Sans CJK SC", "Noto Sans CJK JP", "Source Han Sans SC", "WenQuanYi Zen Hei", "SimHei",
          "Microsoft YaHei", "PingFang SC", "Arial Unicode MS", "DejaVu Sans"]


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def missing_cjk_font(result: ClusterResult) -> bool:
    """True when a cluster title is in Chinese, Japanese or Korean and matplotlib has none of the CJK fonts of
    ``_FONTS`` (write_png then draws those titles as empty boxes: the CLI says so)."""
    if not any(_CJK.search(c.title or "") for c in result.clusters):
        return False
    from matplotlib import font_manager

    for name in _FONTS[:-1]:  # DejaVu Sans, the last resort, has no CJK glyphs
        try:
            font_manager.findfont(name, fallback_to_default=False)
            return False
        except ValueError:
            continue
    return True


def require_matplotlib() -> None:
    """Raise :class:`ConfigError` naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ConfigError("PNG export needs matplotlib, which is not installed: pip install 'sag-pg[plot]'") from exc


def write_png(result: ClusterResult, path: str | Path, *, max_edges: int = 20_000, legend: int = 12,
              dpi: int = 150) -> Path:
    """Draw the clusters as a PNG (needs matplotlib: ``pip install 'sag-pg[plot]'``); returns the path."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    target = Path(path)
    positions = _layout(result)
    edges = sorted(result.graph.edges(data="weight"), key=lambda e: -e[2])[:max_edges]
    cmap = plt.get_cmap("tab20")

    def color(cluster_size: int, ordinal: int) -> tuple[float, float, float, float]:
        return cmap(ordinal % 20) if cluster_size > 1 else (0.7, 0.7, 0.7, 1.0)

    with warnings.catch_warnings(), matplotlib.rc_context({"font.sans-serif": _FONTS}):
        # Without a CJK font, missing glyphs are drawn as boxes rather than warned about.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
        fig, ax = plt.subplots(figsize=(12, 12))
        try:
            if edges:
                segments = [(positions[a], positions[b]) for a, b, _ in edges]
                ax.add_collection(LineCollection(segments, colors="#999999", linewidths=0.3, alpha=0.25,
                                                 zorder=1))
            points = [(positions[e], color(c.size, c.ordinal)) for c in result.clusters for e in c.event_ids]
            size = max(2.0, 30.0 / math.sqrt(max(1, len(points)) / 100.0))
            ax.scatter([p[0][0] for p in points], [p[0][1] for p in points], c=[p[1] for p in points], s=size,
                       linewidths=0, zorder=2)
            named = [c for c in result.clusters[:legend] if c.size > 1]
            for cluster in named:
                ax.scatter([], [], color=color(cluster.size, cluster.ordinal),
                           label=f"{cluster.title} ({cluster.size})")
            if named:
                ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
            modularity = f", modularity {result.modularity:.3f}" if result.modularity is not None else ""
            ax.set_title(f"{result.event_count} events, {len(result.clusters)} clusters{modularity}")
            ax.set_aspect("equal")
            ax.autoscale()
            ax.axis("off")
            fig.savefig(target, dpi=dpi, bbox_inches="tight")
        finally:
            plt.close(fig)
    return target
