-- What real clients send before (and around) their first query, from
-- ../shared/reference/client-compat.md and the clients' sources. Each
-- statement must be answered without error and without budget cost.
-- Blocks: "-- client: NAME" then statements, each ending with ";" at the
-- end of a line.

-- client: pgjdbc
SET extra_float_digits = 3;
SET application_name = 'PostgreSQL JDBC Driver';
SHOW TRANSACTION ISOLATION LEVEL;
select current_schema();
SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid FROM pg_catalog.pg_type LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r from pg_namespace as ns join ( select s.r, (current_schemas(false))[s.r] as nspname from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r using ( nspname ) ) as sp ON sp.nspoid = typnamespace WHERE typname = 'int4' ORDER BY sp.r, pg_type.oid DESC LIMIT 1;
SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 23;

-- client: SQLAlchemy
select pg_catalog.version();
select current_schema();
show transaction isolation level;
show standard_conforming_strings;
SELECT 1;
BEGIN;
ROLLBACK;
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']);

-- client: Metabase
show timezone;
SET SESSION TIMEZONE TO 'UTC';
SELECT n.nspname AS schema, c.relname AS name, CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS type, d.description AS description, stat.n_live_tup AS estimated_row_count FROM pg_catalog.pg_class c INNER JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid LEFT JOIN pg_catalog.pg_description d ON c.oid = d.objoid AND d.objsubid = 0 AND d.classoid = 'pg_class'::regclass LEFT JOIN pg_stat_user_tables stat ON n.nspname = stat.schemaname AND c.relname = stat.relname WHERE c.relnamespace = n.oid AND n.nspname !~ '^information_schema|catalog_history|pg_' AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND n.nspname IN ('public') ORDER BY type, schema, name;
SELECT c.column_name AS name, c.udt_name AS database_type, c.ordinal_position - 1 AS database_position, c.table_schema AS table_schema, c.table_name AS table_name FROM information_schema.columns c WHERE c.table_schema IN ('public') ORDER BY table_schema, table_name, database_position;
SELECT TRUE AS _ FROM "public"."visits" WHERE 1 <> 1 LIMIT 0;
SELECT TRUE AS _ FROM "public"."clinics" WHERE 1 <> 1 LIMIT 0;

-- client: Grafana
SELECT current_setting('server_version_num')::int/100 as version;
SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) as "table" FROM information_schema.tables WHERE quote_ident(table_schema) NOT IN ('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') AND table_type = 'BASE TABLE' ORDER BY 1;
SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns WHERE quote_ident(table_name) = 'visits' ORDER BY 1;
-- ping;

-- client: DBeaver
SELECT current_schema(),session_user;
SHOW search_path;
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate ORDER BY db.datname;
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname;
