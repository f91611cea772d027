-- Real client and BI SQL sent by PostgreSQL clients, for NormalizePostgres
-- and the TiDB parser (normalize_test.go, TestCorpus).
--
-- Each entry: "-- name:", "-- source:" (which client sends it and when),
-- "-- expect:" and the SQL up to the next "-- name:". Expectations:
--   ok                 normalizes and parses
--   0A000 <text>       NormalizePostgres refuses it with SQLSTATE 0A000,
--                      message containing <text>
--   42601 <token>      normalizes, but the TiDB parser cannot read it:
--                      syntax error at or near <token>
-- "-- why:" says why an entry fails. Entries that fail are statements the
-- engine answers itself or routes to the catalog path.

-- name: pgx_ping
-- source: pgx Conn.Ping (Grafana, any Go client)
-- expect: ok
-- ping

-- name: pgjdbc_extra_float_digits
-- source: pgjdbc, first statement after startup
-- expect: ok
SET extra_float_digits = 3

-- name: pgjdbc_application_name
-- source: pgjdbc, after startup
-- expect: ok
SET application_name = 'PostgreSQL JDBC Driver'

-- name: pgjdbc_isolation
-- source: pgjdbc Connection.getTransactionIsolation; SQLAlchemy on connect
-- expect: 42601 "TRANSACTION"
-- why: PostgreSQL SHOW form; the engine answers it locally
SHOW TRANSACTION ISOLATION LEVEL

-- name: sqlalchemy_standard_conforming_strings
-- source: SQLAlchemy psycopg dialect initialize()
-- expect: 42601 "standard_conforming_strings"
-- why: PostgreSQL SHOW of a setting; the engine answers it locally
show standard_conforming_strings

-- name: sqlalchemy_version
-- source: SQLAlchemy psycopg dialect _get_server_version_info
-- expect: ok
select pg_catalog.version()

-- name: sqlalchemy_current_schema
-- source: SQLAlchemy dialect _get_default_schema_name; pgjdbc getSchema
-- expect: ok
select current_schema()

-- name: sqlalchemy_ping
-- source: SQLAlchemy pool pre-ping, Superset connection test
-- expect: ok
SELECT 1

-- name: psycopg_begin
-- source: psycopg 3 outside autocommit
-- expect: ok
BEGIN

-- name: sqlalchemy_table_names
-- source: SQLAlchemy 2 PGDialect.get_table_names (psycopg 3 server-side binding)
-- expect: 42601 "ARRAY"
-- why: ARRAY[...] constructor; a catalog query
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY[$1::VARCHAR, $2::VARCHAR, $3::VARCHAR]) AND pg_catalog.pg_class.relpersistence != $4::CHAR AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $5::VARCHAR

-- name: sqlalchemy_has_table
-- source: SQLAlchemy 2 PGDialect.has_table
-- expect: 42601 "ARRAY"
-- why: ARRAY[...] constructor; a catalog query
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relname = $1::VARCHAR AND pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR, $5::VARCHAR, $6::VARCHAR]) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $7::VARCHAR

-- name: pgjdbc_type_oid
-- source: pgjdbc TypeInfoCache.getOidStatement (simple type name)
-- expect: 0A000 cast to type regproc is not supported
-- why: regproc has no TiDB cast; a catalog query
SELECT t.oid, n.nspname = ANY(current_schemas(true)), n.nspname, t.typinput = 'array_in'::regproc, t.typname, t.typelem, t.typtype, t.typdelim, e.typname, e.typtype, e.typdelim, arr.oid, e.typtype  FROM pg_catalog.pg_type t  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace  LEFT JOIN pg_catalog.pg_type arr ON (arr.typelem, arr.typinput) = (t.oid, 'array_in'::regproc)  LEFT JOIN pg_catalog.pg_type e ON t.typelem = e.oid  LEFT JOIN (SELECT s.r, (current_schemas(false))[r] AS nspname               FROM generate_series(1, array_upper(current_schemas(false), 1)) AS s (r)) AS sp    USING (nspname) WHERE t.typname = $1 ORDER BY sp.r, t.oid DESC LIMIT 1

-- name: pgjdbc_get_tables
-- source: pgjdbc PgDatabaseMetaData.getTables (DBeaver and other JDBC tools)
-- expect: 0A000 cast to type regclass is not supported
-- why: regclass has no TiDB cast; a catalog query
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN 'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN 'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN 'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN 'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = 'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE 'public' AND c.relname LIKE '%'  AND (false  OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME

-- name: pgjdbc_get_columns
-- source: pgjdbc PgDatabaseMetaData.getColumns
-- expect: ok
SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped  AND n.nspname LIKE 'public' AND c.relname LIKE 'visits') c WHERE true  ORDER BY nspname,c.relname,attnum

-- name: pgjdbc_get_schemas
-- source: pgjdbc PgDatabaseMetaData.getSchemas
-- expect: 42601 "!"
-- why: PostgreSQL regular-expression operator
SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace  WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  ORDER BY TABLE_SCHEM

-- name: metabase_timezone
-- source: Metabase sync, before reading dates
-- expect: 42601 "timezone"
-- why: PostgreSQL SHOW of a setting; the engine answers it locally
show timezone;

-- name: metabase_set_timezone
-- source: Metabase with a report timezone
-- expect: 42601 "TO"
-- why: PostgreSQL SET ... TO form; the engine answers it locally
SET SESSION TIMEZONE TO 'UTC';

-- name: metabase_describe_database
-- source: Metabase PostgreSQL driver, describe-database (table list)
-- expect: 0A000 cast to type regclass is not supported
-- why: regclass has no TiDB cast; a catalog query
SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind" WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS "type", "d"."description" AS "description", "stat"."n_live_tup" AS "estimated_row_count" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND ("d"."objsubid" = 0) AND ("d"."classoid" = 'pg_class'::regclass) LEFT JOIN "pg_stat_user_tables" AS "stat" ON ("n"."nspname" = "stat"."schemaname") AND ("c"."relname" = "stat"."relname") WHERE ("c"."relnamespace" = "n"."oid") AND ("n"."nspname" !~ '^information_schema|catalog_history|pg_') AND ("n"."nspname" <> 'information_schema') AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND ("n"."nspname" IN ('public')) ORDER BY "type" ASC, "schema" ASC, "name" ASC

-- name: metabase_describe_fields
-- source: Metabase PostgreSQL driver, describe-fields (columns from information_schema)
-- expect: ok
SELECT "c"."column_name" AS "name", "c"."udt_name" AS "database-type", "c"."ordinal_position" - 1 AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS "table-name", "c"."is_nullable" = 'NO' AS "database-required", CAST("c"."column_default" IS NOT NULL AS INTEGER) AS "database-is-auto-increment" FROM "information_schema"."columns" AS "c" WHERE "c"."table_schema" IN ('public') ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC

-- name: metabase_can_read
-- source: Metabase sync, table readability probe
-- expect: ok
SELECT TRUE AS "_" FROM "public"."visits" WHERE 1 <> 1 LIMIT 0

-- name: metabase_count_by
-- source: Metabase question "count of visits by diagnosis"
-- expect: ok
SELECT "public"."visits"."diagnosis" AS "diagnosis", count(*) AS "count" FROM "public"."visits" GROUP BY "public"."visits"."diagnosis" ORDER BY "public"."visits"."diagnosis" ASC

-- name: metabase_by_month
-- source: Metabase question "count by visit_date: month"
-- expect: ok
SELECT CAST(date_trunc('month', "public"."visits"."visit_date") AS date) AS "visit_date", count(*) AS "count" FROM "public"."visits" GROUP BY CAST(date_trunc('month', "public"."visits"."visit_date") AS date) ORDER BY CAST(date_trunc('month', "public"."visits"."visit_date") AS date) ASC

-- name: metabase_year_extract
-- source: Metabase question "average cost by visit_date: year of era"
-- expect: ok
SELECT CAST(extract(year from "public"."visits"."visit_date") AS integer) AS "visit_date", avg("public"."visits"."cost") AS "avg" FROM "public"."visits" GROUP BY CAST(extract(year from "public"."visits"."visit_date") AS integer) ORDER BY CAST(extract(year from "public"."visits"."visit_date") AS integer) ASC

-- name: metabase_filter_param
-- source: Metabase question with a filter, prepared through pgjdbc
-- expect: ok
SELECT "public"."visits"."diagnosis" AS "diagnosis", count(*) AS "count" FROM "public"."visits" WHERE ("public"."visits"."cost" > $1) AND ("public"."visits"."diagnosis" = $2) GROUP BY "public"."visits"."diagnosis" ORDER BY "count" DESC, "public"."visits"."diagnosis" ASC LIMIT 1048575

-- name: metabase_derived_table
-- source: Metabase nested question (saved question as source)
-- expect: ok
SELECT "source"."diagnosis" AS "diagnosis", "source"."count" AS "count" FROM (SELECT "public"."visits"."diagnosis" AS "diagnosis", count(*) AS "count" FROM "public"."visits" GROUP BY "public"."visits"."diagnosis" ORDER BY "public"."visits"."diagnosis" ASC) AS "source" ORDER BY "source"."count" DESC LIMIT 10

-- name: metabase_relative_date
-- source: Metabase filter "visit_date: previous 30 days"
-- expect: 42601 ")"
-- why: PostgreSQL interval literal without a unit keyword; MySQL needs INTERVAL n DAY
SELECT count(*) AS "count" FROM "public"."visits" WHERE ("public"."visits"."visit_date" >= CAST((CAST(now() AS timestamp) + INTERVAL '-30 day') AS date)) AND ("public"."visits"."visit_date" < CAST(CAST(now() AS timestamp) AS date))

-- name: superset_time_series
-- source: Superset time-series chart, month grain
-- expect: ok
SELECT date_trunc('month', visit_date) AS __timestamp, count(*) AS count FROM public.visits WHERE visit_date >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') AND visit_date < TO_TIMESTAMP('2025-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') GROUP BY date_trunc('month', visit_date) ORDER BY count DESC LIMIT 10000

-- name: superset_table_chart
-- source: Superset table chart with a metric and a series limit
-- expect: ok
SELECT diagnosis AS diagnosis, AVG(cost) AS "AVG(cost)" FROM public.visits JOIN (SELECT diagnosis AS diagnosis__, AVG(cost) AS mme_inner__ FROM public.visits GROUP BY diagnosis ORDER BY mme_inner__ DESC LIMIT 5) AS anon_1 ON diagnosis = diagnosis__ GROUP BY diagnosis ORDER BY "AVG(cost)" DESC LIMIT 1000

-- name: superset_week_grain
-- source: Superset, week grain with a :: cast
-- expect: ok
SELECT DATE_TRUNC('week', visit_date::timestamp) AS __timestamp, SUM(cost) AS "SUM(cost)" FROM public.visits GROUP BY DATE_TRUNC('week', visit_date::timestamp) LIMIT 50000

-- name: grafana_version
-- source: Grafana PostgreSQL data source, version check
-- expect: ok
SELECT current_setting('server_version_num')::int/100 as version

-- name: grafana_tables
-- source: Grafana PostgreSQL query editor, table list
-- expect: ok
select quote_ident(table_name) as "table" from information_schema.tables where quote_ident(table_schema) not in ('information_schema', 'pg_catalog', '_timescaledb_cache', '_timescaledb_catalog', '_timescaledb_internal', '_timescaledb_config', 'timescaledb_information', 'timescaledb_experimental') and table_type = 'BASE TABLE'

-- name: grafana_columns
-- source: Grafana PostgreSQL query editor, column list
-- expect: ok
SELECT quote_ident(column_name) AS "column", data_type AS "type" FROM information_schema.columns WHERE quote_ident(table_name) = 'visits'

-- name: grafana_time_series
-- source: Grafana panel, $__timeGroupAlias and $__timeFilter expanded by Grafana
-- expect: 42601 "epoch"
-- why: EXTRACT(EPOCH FROM ...) is PostgreSQL-only
SELECT floor(extract(epoch from visit_date)/86400)*86400 AS "time", count(*) AS "visits" FROM visits WHERE visit_date BETWEEN '2024-01-01T00:00:00Z' AND '2024-12-31T23:59:59Z' GROUP BY 1 ORDER BY 1

-- name: grafana_macro_cast
-- source: Grafana panel with $__timeGroup and a ::float cast on the value
-- expect: ok
SELECT date_trunc('day', visit_date) AS "time", avg(cost)::float AS "avg cost" FROM visits GROUP BY 1 ORDER BY 1

-- name: dbeaver_current_schema
-- source: DBeaver, connection bootstrap
-- expect: ok
SELECT current_schema(),session_user

-- name: dbeaver_search_path
-- source: DBeaver, connection bootstrap
-- expect: 42601 "search_path"
-- why: PostgreSQL SHOW of a setting; the engine answers it locally
SHOW search_path

-- name: dbeaver_databases
-- source: DBeaver, database navigator
-- expect: ok
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate OR db.datname =$1
ORDER BY db.datname

-- name: dbeaver_schemas
-- source: DBeaver, schema navigator
-- expect: 0A000 cast to type regclass is not supported
-- why: regclass has no TiDB cast; a catalog query
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname

-- name: dbeaver_settings
-- source: DBeaver, server settings lookup
-- expect: ok
select setting from pg_catalog.pg_settings where name=$1

-- name: psql_describe_tables
-- source: psql \dt
-- expect: 42601 "!"
-- why: PostgreSQL regular-expression operator
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;

-- name: psql_describe_table
-- source: psql \d visits
-- expect: 42601 "OPERATOR"
-- why: OPERATOR(schema.op) syntax
SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(visits)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;

-- name: tableau_cast_text
-- source: Tableau, dimension as text
-- expect: ok
SELECT CAST("visits"."diagnosis" AS TEXT) AS "diagnosis", SUM(1) AS "cnt:visits_1", SUM("visits"."cost") AS "sum:cost:ok" FROM "public"."visits" "visits" GROUP BY 1

-- name: tableau_cursor_fetch
-- source: Tableau, reading results through a cursor
-- expect: 42601 "fetch"
-- why: cursor FETCH statement
fetch 2048 in "SQL_CUR0x7f2b5c0"

-- name: analyst_casts
-- source: hand-written analytic SQL with :: casts
-- expect: ok
SELECT EXTRACT(YEAR FROM visit_date)::int AS yr, AVG(cost)::numeric(10,2) AS avg_cost, COUNT(*)::bigint AS n FROM visits WHERE visit_date::date BETWEEN '2024-01-01'::date AND $1::date GROUP BY 1 ORDER BY 1

-- name: analyst_escape_string
-- source: hand-written SQL with an E'' string and a dollar-quoted string
-- expect: ok
SELECT COUNT(*) FROM visits WHERE note = E'it\'s late\n' OR note = $$O'Brien$$

-- name: analyst_ilike
-- source: hand-written analytic SQL
-- expect: ok
SELECT diagnosis, COUNT(*) FROM visits WHERE note ILIKE '%flu%' GROUP BY diagnosis ORDER BY COUNT(*) DESC LIMIT 3

-- name: analyst_limit_all
-- source: generated SQL with LIMIT ALL (e.g. Looker, dbt)
-- expect: ok
SELECT diagnosis, COUNT(*) FROM visits GROUP BY diagnosis ORDER BY 2 DESC LIMIT ALL

-- name: analyst_fetch_first
-- source: standard-SQL pagination (DBeaver result paging, Hibernate)
-- expect: ok
SELECT name FROM clinics ORDER BY name OFFSET 10 ROWS FETCH FIRST 5 ROWS ONLY

-- name: analyst_filter
-- source: hand-written analytic SQL (aggregate FILTER (WHERE ...), rewritten into COUNT(CASE WHEN ... THEN 1 END))
-- expect: ok
SELECT diagnosis, COUNT(*) FILTER (WHERE cost > 100) AS expensive FROM visits GROUP BY 1

-- name: analyst_percentile
-- source: Metabase / Superset median (WITHIN GROUP rewritten into percentile_cont(age, 0.5))
-- expect: ok
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age) FROM people

-- name: analyst_percentile_desc
-- source: hand-written SQL, a percentile in descending order (the 0.1 quantile)
-- expect: ok
SELECT region, percentile_disc(0.9) WITHIN GROUP (ORDER BY "cost" DESC) AS p10 FROM visits GROUP BY region

-- name: analyst_percentile_two_columns
-- source: hand-written SQL, a hypothetical-set ordering of two columns
-- expect: 0A000 needs (ORDER BY column) with one column
-- why: a quantile orders one column
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age, cost) FROM people

-- name: analyst_mode_within_group
-- source: PostgreSQL mode() ordered-set aggregate
-- expect: 0A000 mode ... WITHIN GROUP is not supported
-- why: only percentile_cont and percentile_disc are rewritten
SELECT mode() WITHIN GROUP (ORDER BY region) FROM visits

-- name: analyst_array_literal
-- source: hand-written SQL with an array cast
-- expect: 0A000 cast to type text[] is not supported
-- why: arrays have no TiDB cast
select '{a,b}'::text[]

-- name: analyst_interval_cast
-- source: hand-written SQL
-- expect: 0A000 cast to type interval is not supported
-- why: interval has no TiDB cast
SELECT COUNT(*) FROM visits WHERE visit_date > now() - '7 days'::interval

-- name: analyst_json
-- source: hand-written SQL on a jsonb column
-- expect: 0A000 operators containing # are not supported
-- why: # would start a MySQL comment
SELECT attrs #>> '{a,b}' FROM clinics

-- name: analyst_generate_series
-- source: hand-written SQL filling a date axis
-- expect: 0A000 cast to type interval is not supported
-- why: interval has no TiDB cast (and a set-returning function in FROM would not parse)
SELECT d::date FROM generate_series('2024-01-01'::date, '2024-12-01'::date, '1 month'::interval) AS d

-- name: analyst_mysql_hint
-- source: SQL pasted from a MySQL tool: the hint is a comment to PostgreSQL
-- expect: ok
SELECT /*+ MAX_EXECUTION_TIME(1) */ COUNT(*) FROM visits /*! WHERE 1 = 0 */
