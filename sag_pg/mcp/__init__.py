"""sag-pg as an MCP server (``sag-pg mcp``): search, documents, the knowledge-graph tools and memory as tools
for any agent, on the official ``mcp`` SDK (the optional extra ``sag-pg[mcp]``, imported only when served).

``policy``: what a server may reach (pinned sources, writes). ``tools``: the tools, thin calls into ``SAG``.
``server``: their registration on the SDK's server, errors as tool errors, stdio and Streamable HTTP.
"""

from __future__ import annotations

from .policy import Policy, RefusedError

__all__ = ["Policy", "RefusedError"]
