-- Knowledge graph (issue #17): relation weights and maintenance.

create or replace function sag._cooccurrence_weight(evidence integer)
returns real
language sql immutable parallel safe strict
set search_path = pg_catalog, sag, public, pg_temp
return (evidence::float8 / (evidence + 1))::real;
comment on function sag._cooccurrence_weight(integer) is
    'Weight of a co-occurrence relation seen in n events: n / (n + 1) (1 -> 0.5, 2 -> 0.667, 3 -> 0.75), in [0, 1).';
