#!/usr/bin/env python3
"""What a Python ORM learns about a database, printed as JSON.

Usage: inspect_schema.py URL [--aggregate SQL] [--stream SQL]

URL is an SQLAlchemy URL (postgresql+psycopg2://... or mysql+pymysql://...).
Connecting runs the dialect's own start-up queries (version, hstore lookup,
isolation level, ...); then the inspector lists schemas, tables, views,
columns, primary keys, foreign keys and indexes of the default schema.
--aggregate runs one parameterized query (:lo bound to 0) and prints its
row count; --stream reads a query through a server-side cursor
(stream_results) in batches of 2 and prints the rows it got.
"""
import json
import sys

import sqlalchemy
from sqlalchemy import inspect, text


def main():
    url = sys.argv[1]
    args = sys.argv[2:]
    engine = sqlalchemy.create_engine(url)
    out = {}
    with engine.connect() as conn:
        insp = inspect(conn)
        out["schemas"] = sorted(s for s in insp.get_schema_names() if s not in ("pg_catalog", "mysql", "performance_schema", "sys"))
        tables = sorted(insp.get_table_names())
        out["tables"] = tables
        out["views"] = sorted(insp.get_view_names())
        out["columns"] = {
            t: [[c["name"], str(c["type"]).split("(")[0].upper(), bool(c["nullable"])] for c in insp.get_columns(t)]
            for t in tables
        }
        out["primary_keys"] = {t: insp.get_pk_constraint(t).get("constrained_columns") or [] for t in tables}
        out["foreign_keys"] = {t: insp.get_foreign_keys(t) for t in tables}
        out["indexes"] = {t: [i["name"] for i in insp.get_indexes(t)] for t in tables}
        out["has_table"] = [insp.has_table(tables[0]) if tables else None, insp.has_table("no_such_table")]
        while args:
            flag, sql = args[0], args[1]
            args = args[2:]
            if flag == "--aggregate":
                rows = conn.execute(text(sql), {"lo": 0}).fetchall()
                out["aggregate_rows"] = len(rows)
            elif flag == "--stream":
                result = conn.execution_options(stream_results=True, max_row_buffer=2).execute(text(sql))
                got = []
                for part in result.partitions(2):
                    got.append([list(r) for r in part])
                out["stream_batches"] = got
    print(json.dumps(out, sort_keys=True, default=str))


if __name__ == "__main__":
    main()
