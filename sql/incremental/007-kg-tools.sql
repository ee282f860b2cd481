-- sag-pg schema, version 7 (issue #18): what the KG query tools need beside sag.relations.  Frozen once released.
--
-- An imported knowledge graph lives in the tables of the knowledge-graph memory (#17): its nodes are sag.keys
-- of one source (type 'entity', normalized = the node's id, e.g. m.02mjmr; literal objects are keys of type
-- literal / number / bool / date), its triples sag.relations with origin 'import'.  Names come in many
-- languages per node, so they get a table of their own.

create table sag.kg_names (
    key_id     bigint not null references sag.keys(id) on delete cascade,
    source_id  bigint not null references sag.sources(id) on delete cascade,
    lang       text not null default '',   -- the literal's language tag, lower case ('' without one)
    name       text not null
);
-- md5: a name can be longer than a B-tree entry may be.
create unique index kg_names_unique_idx on sag.kg_names (key_id, lang, md5(name));
-- Name -> node lookups (entity resolution), case-insensitive, on a bounded prefix for the same reason.
create index kg_names_lookup_idx on sag.kg_names (source_id, lower(left(name, 200)));
comment on table sag.kg_names is
    'Names of knowledge-graph nodes (keys) per language (type.object.name, rdfs:label of an RDF import).';

-- Triples on their way from the RDF parser to keys, names and relations: COPY fills a batch, sag.kg_load_batch
-- moves it.  Unlogged: a crash loses only batches not yet loaded.
create unlogged table sag.kg_import_rows (
    batch      bigint not null,
    line       bigint not null,
    subject    text not null,
    predicate  text not null,
    object     text not null,
    -- what the object is: e entity (IRI or blank node), n a name of the subject, s string, f number,
    -- b boolean, d date/time
    kind       "char" not null check (kind in ('e', 'n', 's', 'f', 'b', 'd')),
    lang       text not null default ''
);
create index kg_import_rows_batch_idx on sag.kg_import_rows (batch);
create sequence sag.kg_import_batches;

-- get_relations lists the relations pointing at a node: by tail and type, not by tail alone.
create index relations_tail_type_idx on sag.relations (tail_key_id, relation_type);
