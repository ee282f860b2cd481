"""Turning chunks into events and keys: offline rules (:mod:`.rules`) or an LLM."""
