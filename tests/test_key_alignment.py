"""One key per entity across pages, through the real pipeline (rule extractor, sag.resolve_keys), and the
keys a question names leading to their pages."""

from __future__ import annotations

import psycopg

from sag_pg import SAG

FILM = "Adam Clayton Powell is a 1989 documentary film. It was nominated for an Academy Award."
POLITICIAN = ("The congressman Adam Clayton Powell represented Harlem. "
              "He served in the House of Representatives from 1945.")
OPERETTA = "Aschenbrödel is an operetta. It premiered in Vienna in 1901."
QUESTION_PAGE = "The composer wrote Aschenbrodel late in life and died in 1905."


def keys_of(conn: psycopg.Connection, uri: str) -> dict[str, int]:
    rows = conn.execute(
        "select distinct k.normalized, k.id from sag.documents d join sag.events e on e.document_id = d.id "
        "join sag.event_keys ek on ek.event_id = e.id join sag.keys k on k.id = ek.key_id where d.uri = %s",
        [uri]).fetchall()
    return dict(rows)


def test_a_title_and_its_mentions_are_one_key(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text(FILM, uri="film", title="Adam Clayton Powell (film)")
    sag.ingest_text(POLITICIAN, uri="politician", title="Harlem politics")
    film, politician = keys_of(db_conn, "film"), keys_of(db_conn, "politician")
    # The film page's subject (a topic) and the person named on the other page: one key, the bridge.
    assert "adamclaytonpowellfilm" not in film
    assert film["adamclaytonpowell"] == politician["adamclaytonpowell"]
    # Accents: the same key whether a page writes Aschenbrödel or Aschenbrodel.
    sag.ingest_text(OPERETTA, uri="operetta", title="Aschenbrödel")
    sag.ingest_text(QUESTION_PAGE, uri="composer", title="A composer")
    assert keys_of(db_conn, "operetta")["aschenbrodel"] == keys_of(db_conn, "composer")["aschenbrodel"]


def test_a_named_key_leads_to_its_page(sag: SAG) -> None:
    sag.ingest_text(FILM, uri="film", title="Adam Clayton Powell (film)")
    sag.ingest_text(POLITICIAN, uri="politician", title="Harlem politics")
    result = sag.search("Was Adam Clayton Powell nominated?", top_n=2)
    named = next(k for k in result.keys if k.name == "Adam Clayton Powell")
    assert named.weight == max(k.weight for k in result.keys)   # named_key_floor 1.0
    assert {hit.document_uri for hit in result.chunks} == {"film", "politician"}
    assert named.key_id in result.named_keys
