"""Offline text processing: tokens and sentences, chunks, summaries, key normalisation (no database)."""
