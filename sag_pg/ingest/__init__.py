"""Ingestion: read inputs, turn each document into summary/chunks/events/keys, store it atomically."""
