-- A co-occurrence relation's evidence is derived, not stored (issue #36 item 11): its events are those linked
-- to both of its keys (sag.event_keys), evidence_count counts them, and a document's deletion finds what it
-- takes off in its own links (sag_internal._before_document_delete).  The evidence rows of co-occurrence
-- relations go; those of stated relations (llm, call, import) stay.  On the 1 MB Chinese benchmark document
-- the rows were 138 k for 90 k relations, each with two foreign-key checks: half of the co-occurrence time.
delete from sag.relation_events re
 using sag.relations r
 where r.source_id = re.source_id and r.id = re.relation_id and r.origin = 'cooccurrence';

-- Foreign keys to sag.sources that another foreign key of the same row already implies (chunk -> its
-- document, event -> its chunk, relation -> its keys, each with source_id, each ON DELETE CASCADE from the
-- source's rows): one check of a write each, for nothing.
alter table sag.chunks drop constraint chunks_source_id_fkey;
alter table sag.events drop constraint events_source_id_fkey;
alter table sag.relations drop constraint relations_source_id_fkey;
