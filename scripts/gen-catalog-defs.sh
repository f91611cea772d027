#!/usr/bin/env bash
# Regenerates the relation definitions the virtual catalog is built from
# (session/catalog/defs): every table and view of pg_catalog and
# information_schema as PostgreSQL 15 declares them, and every view of
# MariaDB's information_schema, as "name|kind|column type, ..." lines.
# Only names and types are read; no row of any server is copied.
#
#   PGDSN='postgres://postgres@127.0.0.1:5432/postgres' MYARGS='-uroot -h127.0.0.1 -P3306' \
#     bash scripts/gen-catalog-defs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=session/catalog/defs
psql "$PGDSN" -tA -F'|' -c "
select n.nspname||'.'||c.relname, c.relkind,
  string_agg(a.attname||' '||replace(replace(replace(replace(replace(format_type(a.atttypid, null),
    'information_schema.sql_identifier', 'name'), 'information_schema.cardinal_number', 'integer'),
    'information_schema.character_data', 'character varying'), 'information_schema.yes_or_no', 'character varying'),
    'information_schema.time_stamp', 'timestamp with time zone'), ', ' order by a.attnum)
from pg_class c join pg_namespace n on n.oid = c.relnamespace
  join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
where n.nspname in ('pg_catalog', 'information_schema') and c.relkind in ('r', 'v')
group by 1, 2 order by 1" >"$out/postgres15.txt"
# shellcheck disable=SC2086
mariadb --no-defaults $MYARGS -N -B -e "
select concat(TABLE_NAME, '|v|', group_concat(concat(COLUMN_NAME, ' ', COLUMN_TYPE) order by ORDINAL_POSITION separator ', '))
from information_schema.COLUMNS where TABLE_SCHEMA = 'information_schema'
group by TABLE_NAME order by TABLE_NAME" >"$out/mariadb10.11.txt"
