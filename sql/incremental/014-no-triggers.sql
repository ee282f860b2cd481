-- Issue #32 (Citus): no triggers on sag's tables.  Citus distributes no table that has triggers, and a reader
-- of sag.store_document / sag.delete_document should see everything they do.  What the triggers did is now
-- an explicit, set-based step of those functions (sql/idempotent/020-ingest.sql):
--   chunks_queue_term_stats_*  -> the +1 / -1 rows of sag.term_stats_pending for a stored / deleted document;
--   event_keys_cooccurrence    -> sag_internal._cooccur_links over the stored document's links;
--   relation_events_gone       -> sag_internal._before_document_delete takes the events off the relations;
--   keys_keep_pinned           -> sag_internal._adjust_key_counts deletes no pinned key.
-- Loading rows by other means (COPY, pg_restore of data only) is followed by sag.rebuild_term_stats() and
-- sag.rebuild_cooccurrence(), as the bulk load of `sag-pg bench-scale` already did.
drop trigger if exists chunks_queue_term_stats_insert on sag.chunks;
drop trigger if exists chunks_queue_term_stats_delete on sag.chunks;
drop trigger if exists chunks_queue_term_stats_update on sag.chunks;
drop trigger if exists relation_events_gone on sag.relation_events;
drop trigger if exists event_keys_cooccurrence on sag.event_keys;
drop trigger if exists keys_keep_pinned on sag.keys;
drop function if exists sag_internal._queue_inserted_chunks();
drop function if exists sag_internal._queue_deleted_chunks();
drop function if exists sag_internal._queue_updated_chunks();
drop function if exists sag_internal._relation_evidence_gone();
drop function if exists sag_internal._links_added();
drop function if exists sag_internal._keep_pinned_key();
