"""Knowledge-graph query tools for LLM agents (issue #18): RDF import into sag.relations, get_relations and
get_triples over PostgreSQL or a SPARQL endpoint, and the agent loop that lets a model call them."""
