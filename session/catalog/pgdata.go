package catalog

import (
	"fmt"
	"strings"
)

// The PostgreSQL catalog's contents. Row counts and sizes are those of a
// table never analyzed (reltuples -1, relpages 0), statistics views are
// empty, and the only role is the session's analyst (role 10).

// wellKnownRelations are catalog relations whose OIDs clients write as
// constants or compare with 'pg_class'::regclass.
var wellKnownRelations = map[string]int64{
	"pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259, "pg_database": 1262,
	"pg_authid": 1260, "pg_namespace": 2615, "pg_constraint": 2606, "pg_description": 2609,
	"pg_index": 2610, "pg_trigger": 2620, "pg_am": 2601, "pg_attrdef": 2604, "pg_rewrite": 2618,
	"pg_tablespace": 1213, "pg_collation": 3456, "pg_extension": 3079, "pg_roles": 12001,
}

// sessionViews are relations whose rows depend on the session: each is
// defined, per statement, as a common table expression over the stored
// rows with the analyst's name filled in (the column named here).
var sessionViews = map[string][]string{
	"pg_roles": {"rolname"}, "pg_user": {"usename"}, "pg_tables": {"tableowner"},
	"pg_views": {"viewowner"}, "pg_matviews": {"matviewowner"},
	"information_schema.enabled_roles": {"role_name"},
	"information_schema.schemata":      {"schema_owner"},
}

// pgTable is where a PostgreSQL relation lives in SQLite: pg_catalog's
// under their own names, information_schema's as "information_schema.x",
// session views' stored rows with a prefix.
func pgTable(schema, name string) string {
	n := name
	if schema == "information_schema" {
		n = "information_schema." + name
	}
	if sessionViews[n] != nil {
		return "_dpproxy_" + n
	}
	return n
}

func buildPostgres(b *builder, s Schema) error {
	defs, err := parseDefs(postgresDefs, "")
	if err != nil {
		return err
	}
	// Every relation of PostgreSQL 15, with its columns.
	byName := map[string]relationDef{}
	for i := range defs {
		for j := range defs[i].columns {
			defs[i].columns[j].typ = postgresUDT(defs[i].columns[j].typ)
		}
		d := defs[i]
		byName[d.schema+"."+d.name] = d
		b.create(pgTable(d.schema, d.name), d, d.schema == "pg_catalog" && !d.view)
	}
	for _, t := range pgBaseTypes {
		b.names.add("regtype", t.name, t.oid)
		if t.array != 0 {
			b.names.add("regtype", "_"+t.name, t.array)
		}
	}
	b.names.add("regtype", "integer", 23)
	b.names.add("regtype", "boolean", 16)
	b.names.add("regtype", "character varying", 1043)
	b.names.add("regtype", "bigint", 20)
	b.names.add("regtype", "smallint", 21)
	b.names.add("regtype", "double precision", 701)
	b.names.add("regproc", "array_in", 750)

	// Namespaces.
	namespaces := []struct {
		oid  int64
		name string
	}{{pgCatalogOID, "pg_catalog"}, {publicOID, "public"}, {informationSchemaOID, "information_schema"}}
	nsOID := map[string]int64{"pg_catalog": pgCatalogOID, "public": publicOID, "information_schema": informationSchemaOID}
	next := int64(firstUserOID)
	alloc := func() int64 { next++; return next - 1 }
	for _, t := range s.Tables {
		sch := t.Schema
		if sch == "" {
			sch = "public"
		}
		if _, ok := nsOID[sch]; !ok {
			nsOID[sch] = alloc()
			namespaces = append(namespaces, struct {
				oid  int64
				name string
			}{nsOID[sch], sch})
		}
	}
	for _, ns := range namespaces {
		b.insert("pg_namespace", row{"oid": ns.oid, "nspname": ns.name, "nspowner": analystOID})
		b.names.add("regnamespace", ns.name, ns.oid)
		b.insert(pgTable("information_schema", "schemata"), row{"catalog_name": s.Database, "schema_name": ns.name})
	}

	// Types.
	for _, t := range pgBaseTypes {
		b.insert("pg_type", pgTypeRow(t.oid, t.name, t.length, t.byVal, t.category, t.kind, 0, t.array, 0, t.name+"in"))
		if t.array != 0 {
			b.insert("pg_type", pgTypeRow(t.array, "_"+t.name, -1, false, "A", "b", t.oid, 0, 0, "array_in"))
		}
	}

	// The catalog's own relations, then the policy's.
	sysNext := int64(12100)
	for _, d := range defs {
		oid, ok := wellKnownRelations[d.name]
		if !ok || d.schema != "pg_catalog" {
			oid = sysNext
			sysNext++
		}
		kind := "r"
		if d.view {
			kind = "v"
		}
		addPGRelation(b, s, nsOID[d.schema], d.schema, d.name, kind, oid, sysNext+5000, d.columns, nil)
		sysNext++
	}
	for _, t := range s.Tables {
		sch := t.Schema
		if sch == "" {
			sch = "public"
		}
		oid, rowType := alloc(), alloc()
		kind := "r"
		if t.Kind == View {
			kind = "v"
		}
		cols := make([]columnDef, len(t.Columns))
		for i, c := range t.Columns {
			_, udt, _, _ := pgTypeOf(c)
			cols[i] = columnDef{c.Name, udt}
		}
		addPGRelation(b, s, nsOID[sch], sch, t.Name, kind, oid, rowType, cols, &t)
		if t.Kind == Public && len(t.PrimaryKey) > 0 {
			addPGPrimaryKey(b, s, nsOID[sch], sch, t, oid, alloc(), alloc())
		}
	}

	// Database, settings, access methods, tablespaces, collations, the role.
	b.insert("pg_database", row{"oid": databaseOID, "datname": s.Database, "datdba": analystOID, "encoding": 6,
		"datlocprovider": "c", "datallowconn": true, "datconnlimit": -1, "dattablespace": 1663,
		"datcollate": "C", "datctype": "C"})
	b.names.add("regdatabase", s.Database, databaseOID)
	b.insert("pg_am", row{"oid": 2, "amname": "heap", "amhandler": "heap_tableam_handler", "amtype": "t"},
		row{"oid": 403, "amname": "btree", "amhandler": "bthandler", "amtype": "i"})
	b.insert("pg_tablespace", row{"oid": 1663, "spcname": "pg_default", "spcowner": analystOID},
		row{"oid": 1664, "spcname": "pg_global", "spcowner": analystOID})
	b.insert("pg_collation", row{"oid": 100, "collname": "default", "collnamespace": pgCatalogOID, "collprovider": "d", "collencoding": -1},
		row{"oid": 950, "collname": "C", "collnamespace": pgCatalogOID, "collprovider": "c", "collencoding": -1, "collcollate": "C", "collctype": "C"})
	b.insert("_dpproxy_pg_roles", row{"oid": analystOID, "rolname": "", "rolinherit": true, "rolcanlogin": true, "rolconnlimit": -1, "rolpassword": "********"})
	b.insert("_dpproxy_pg_user", row{"usesysid": analystOID, "usename": "", "passwd": "********"})
	b.insert("_dpproxy_information_schema.enabled_roles", row{"role_name": ""})
	for _, st := range []struct{ name, setting, vartype, category string }{
		{"server_encoding", "UTF8", "string", "Client Connection Defaults"},
		{"client_encoding", "UTF8", "string", "Client Connection Defaults"},
		{"standard_conforming_strings", "on", "bool", "Version and Platform Compatibility"},
		{"integer_datetimes", "on", "bool", "Preset Options"},
		{"max_identifier_length", "63", "integer", "Preset Options"},
		{"DateStyle", "ISO, MDY", "string", "Client Connection Defaults"},
		{"TimeZone", "UTC", "string", "Client Connection Defaults"},
		{"search_path", `"$user", public`, "string", "Client Connection Defaults"},
		{"default_transaction_read_only", "on", "bool", "Client Connection Defaults"},
		{"max_index_keys", "32", "integer", "Preset Options"},
		{"max_function_args", "100", "integer", "Preset Options"},
		{"block_size", "8192", "integer", "Preset Options"},
		{"lc_collate", "C", "string", "Preset Options"},
		{"lc_ctype", "C", "string", "Preset Options"},
		{"server_version", "15.0", "string", "Preset Options"},
		{"server_version_num", "150000", "integer", "Preset Options"},
		{"transaction_isolation", "read committed", "enum", "Client Connection Defaults"},
		{"IntervalStyle", "postgres", "enum", "Client Connection Defaults"},
	} {
		b.insert("pg_settings", row{"name": st.name, "setting": st.setting, "vartype": st.vartype, "category": st.category,
			"context": "user", "source": "default", "boot_val": st.setting, "reset_val": st.setting, "pending_restart": false})
	}
	// Indexes for the lookups catalog queries make (by OID, by name).
	for _, ix := range []string{
		"pg_class (oid)", "pg_class (relname)", "pg_class (relnamespace)", "pg_attribute (attrelid, attnum)",
		"pg_type (oid)", "pg_type (typname)", "pg_namespace (oid)", "pg_index (indrelid)", "pg_index (indexrelid)",
		"pg_constraint (conrelid)", "`information_schema.columns` (table_schema, table_name)", "`information_schema.tables` (table_name)",
	} {
		b.exec("CREATE INDEX " + sqliteIdent("ix_"+ix) + " ON " + ix)
	}
	return nil
}

func pgTypeRow(oid int64, name string, length int64, byVal bool, category, kind string, elem, array, relid int64, input string) row {
	collation := 0
	switch name {
	case "text", "varchar", "bpchar":
		collation = 100
	case "name":
		collation = 950
	}
	return row{"oid": oid, "typname": name, "typnamespace": pgCatalogOID, "typowner": analystOID, "typlen": length,
		"typbyval": byVal, "typtype": kind, "typcategory": category, "typisdefined": true, "typdelim": ",",
		"typrelid": relid, "typelem": elem, "typarray": array, "typinput": input, "typoutput": strings.TrimSuffix(input, "in") + "out",
		"typreceive": "-", "typsend": "-", "typmodin": "-", "typmodout": "-", "typanalyze": "-",
		"typalign": "i", "typstorage": "p", "typtypmod": -1, "typndims": 0, "typcollation": collation, "typsubscript": "-"}
}

// addPGRelation adds a table or view: pg_class, its row type, pg_attribute,
// and the information_schema rows. t is nil for the catalog's own relations.
func addPGRelation(b *builder, s Schema, ns int64, schema, name, kind string, oid, rowType int64, cols []columnDef, t *Table) {
	qualified := name
	if schema != "pg_catalog" && schema != "public" {
		qualified = schema + "." + name
	}
	b.names.add("regclass", qualified, oid)
	if schema == "pg_catalog" {
		b.names.add("regclass", "pg_catalog."+name, oid)
	}
	am := int64(2)
	if kind == "v" {
		am = 0
	}
	hasPK := t != nil && t.Kind == Public && len(t.PrimaryKey) > 0
	b.insert("pg_class", row{"oid": oid, "relname": name, "relnamespace": ns, "reltype": rowType, "relowner": analystOID,
		"relam": am, "relfilenode": oid, "reltablespace": 0, "relpages": 0, "reltuples": -1, "relallvisible": 0,
		"relhasindex": hasPK, "relpersistence": "p", "relkind": kind, "relnatts": len(cols), "relispopulated": true,
		"relreplident": "d", "relfrozenxid": 0, "relminmxid": 0})
	b.insert("pg_type", pgTypeRow(rowType, name, -1, false, "C", "c", 0, 0, oid, "record_in"))
	tableType := "BASE TABLE"
	if kind == "v" {
		tableType = "VIEW"
	}
	if schema == "information_schema" || schema == "pg_catalog" {
		if kind == "v" {
			tableType = "VIEW"
		}
	}
	b.insert(pgTable("information_schema", "tables"), row{"table_catalog": s.Database, "table_schema": schema, "table_name": name,
		"table_type": tableType, "is_insertable_into": "NO", "is_typed": "NO"})
	if kind == "r" && schema != "pg_catalog" && schema != "information_schema" {
		b.insert(pgTable("pg_catalog", "pg_tables"), row{"schemaname": schema, "tablename": name, "hasindexes": hasPK,
			"hasrules": false, "hastriggers": false, "rowsecurity": false})
	}
	if kind == "v" && schema != "pg_catalog" && schema != "information_schema" {
		b.insert(pgTable("pg_catalog", "pg_views"), row{"schemaname": schema, "viewname": name})
		b.insert(pgTable("information_schema", "views"), row{"table_catalog": s.Database, "table_schema": schema, "table_name": name,
			"check_option": "NONE", "is_updatable": "NO", "is_insertable_into": "NO", "is_trigger_updatable": "NO",
			"is_trigger_deletable": "NO", "is_trigger_insertable_into": "NO"})
	}
	for i, c := range cols {
		col := Column{Name: c.name}
		typOID, udt, typmod, _ := int64(25), c.typ, int64(-1), ""
		notNull := false
		if t != nil {
			col = t.Columns[i]
			typOID, udt, typmod, _ = pgTypeOf(col)
			notNull = col.NotNull
		} else if o, ok := b.names.oid("regtype", c.typ); ok {
			typOID = o
		}
		length, byVal := int64(-1), false
		for _, bt := range pgBaseTypes {
			if bt.oid == typOID {
				length, byVal = bt.length, bt.byVal
			}
		}
		collation := int64(0)
		if udt == "text" || udt == "varchar" || udt == "bpchar" || udt == "name" {
			collation = 100
			if udt == "name" {
				collation = 950
			}
		}
		b.insert("pg_attribute", row{"attrelid": oid, "attname": c.name, "atttypid": typOID, "attstattarget": -1,
			"attlen": length, "attnum": i + 1, "attndims": 0, "attcacheoff": -1, "atttypmod": typmod, "attbyval": byVal,
			"attalign": "i", "attstorage": "p", "attcompression": "", "attnotnull": notNull, "atthasdef": false,
			"atthasmissing": false, "attidentity": "", "attgenerated": "", "attisdropped": false, "attislocal": true,
			"attinhcount": 0, "attcollation": collation})
		ic := row{"table_catalog": s.Database, "table_schema": schema, "table_name": name, "column_name": c.name,
			"ordinal_position": i + 1, "is_nullable": map[bool]string{true: "NO", false: "YES"}[notNull],
			"data_type": pgDataType(udt, typOID), "udt_catalog": s.Database, "udt_schema": "pg_catalog", "udt_name": udt,
			"dtd_identifier": fmt.Sprint(i + 1), "is_self_referencing": "NO", "is_identity": "NO", "identity_cycle": "NO",
			"is_generated": "NEVER", "is_updatable": "NO"}
		switch udt {
		case "varchar", "bpchar":
			if typmod >= 4 {
				ic["character_maximum_length"] = typmod - 4
				ic["character_octet_length"] = (typmod - 4) * 4
			}
		case "text":
			ic["character_octet_length"] = 1073741824
		case "int2", "int4", "int8":
			ic["numeric_precision"] = map[string]int{"int2": 16, "int4": 32, "int8": 64}[udt]
			ic["numeric_precision_radix"] = 2
			ic["numeric_scale"] = 0
		case "float4", "float8":
			ic["numeric_precision"] = map[string]int{"float4": 24, "float8": 53}[udt]
			ic["numeric_precision_radix"] = 2
		case "numeric":
			ic["numeric_precision_radix"] = 10
			if typmod >= 4 {
				ic["numeric_precision"] = (typmod - 4) >> 16
				ic["numeric_scale"] = (typmod - 4) & 0xffff
			}
		case "date", "timestamp", "timestamptz":
			ic["datetime_precision"] = map[string]int{"date": 0, "timestamp": 6, "timestamptz": 6}[udt]
		}
		if udt == "text" || udt == "varchar" || udt == "bpchar" {
			ic["collation_catalog"], ic["collation_schema"], ic["collation_name"] = nil, nil, nil
		}
		if t != nil {
			// Only the policy's tables: a client's column listing never
			// wants the catalogs' own ~4,000 columns (psql's \d pg_class
			// reads pg_attribute, which has them).
			b.insert(pgTable("information_schema", "columns"), ic)
		}
	}
}

// pgDataType is information_schema.columns.data_type for a type.
func pgDataType(udt string, oid int64) string {
	switch udt {
	case "int2":
		return "smallint"
	case "int4":
		return "integer"
	case "int8":
		return "bigint"
	case "float4":
		return "real"
	case "float8":
		return "double precision"
	case "bool":
		return "boolean"
	case "varchar":
		return "character varying"
	case "bpchar":
		return "character"
	case "timestamp":
		return "timestamp without time zone"
	case "timestamptz":
		return "timestamp with time zone"
	case "text", "numeric", "date", "bytea", "oid", "json", "jsonb", "uuid", "interval", "xml", "inet":
		return udt
	case "name":
		return "name"
	}
	if strings.HasPrefix(udt, "_") {
		return "ARRAY"
	}
	return "USER-DEFINED"
}

// addPGPrimaryKey adds a public table's primary key: its index (pg_class,
// pg_index), its constraint (pg_constraint) and information_schema rows.
func addPGPrimaryKey(b *builder, s Schema, ns int64, schema string, t Table, tableOID, indexOID, conOID int64) {
	var keys []string
	var keyJSON []string
	for _, k := range t.PrimaryKey {
		for i, c := range t.Columns {
			if strings.EqualFold(c.Name, k) {
				keys = append(keys, fmt.Sprint(i+1))
				keyJSON = append(keyJSON, fmt.Sprint(i+1))
			}
		}
	}
	name := t.Name + "_pkey"
	b.names.add("regclass", name, indexOID)
	b.insert("pg_class", row{"oid": indexOID, "relname": name, "relnamespace": ns, "reltype": 0, "relowner": analystOID,
		"relam": 403, "relfilenode": indexOID, "relpages": 0, "reltuples": -1, "relpersistence": "p", "relkind": "i",
		"relnatts": len(keys), "relispopulated": true, "relreplident": "n"})
	b.insert("pg_index", row{"indexrelid": indexOID, "indrelid": tableOID, "indnatts": len(keys), "indnkeyatts": len(keys),
		"indisunique": true, "indisprimary": true, "indimmediate": true, "indisvalid": true, "indisready": true,
		"indislive": true, "indkey": strings.Join(keys, " "), "indcollation": strings.Repeat("0 ", len(keys)),
		"indclass": strings.Repeat("1978 ", len(keys)), "indoption": strings.Repeat("0 ", len(keys))})
	b.insert("pg_constraint", row{"oid": conOID, "conname": name, "connamespace": ns, "contype": "p", "condeferrable": false,
		"condeferred": false, "convalidated": true, "conrelid": tableOID, "contypid": 0, "conindid": indexOID,
		"conislocal": true, "coninhcount": 0, "connoinherit": true, "conkey": "[" + strings.Join(keyJSON, ",") + "]",
		"confupdtype": " ", "confdeltype": " ", "confmatchtype": " "})
	indexDef := fmt.Sprintf("CREATE UNIQUE INDEX %s ON %s.%s USING btree (%s)", name, schema, t.Name, strings.Join(t.PrimaryKey, ", "))
	b.names.add("indexdef", indexDef, indexOID)
	b.names.add("condef", "PRIMARY KEY ("+strings.Join(t.PrimaryKey, ", ")+")", conOID)
	for i, k := range t.PrimaryKey {
		b.names.add("indexcol", k, indexOID*1000+int64(i)+1)
	}
	b.insert(pgTable("pg_catalog", "pg_indexes"), row{"schemaname": schema, "tablename": t.Name, "indexname": name,
		"indexdef": indexDef})
	b.insert(pgTable("information_schema", "table_constraints"), row{"constraint_catalog": s.Database, "constraint_schema": schema,
		"constraint_name": name, "table_catalog": s.Database, "table_schema": schema, "table_name": t.Name,
		"constraint_type": "PRIMARY KEY", "is_deferrable": "NO", "initially_deferred": "NO", "enforced": "YES"})
	for i, k := range t.PrimaryKey {
		b.insert(pgTable("information_schema", "key_column_usage"), row{"constraint_catalog": s.Database, "constraint_schema": schema,
			"constraint_name": name, "table_catalog": s.Database, "table_schema": schema, "table_name": t.Name,
			"column_name": k, "ordinal_position": i + 1})
		b.insert(pgTable("information_schema", "constraint_column_usage"), row{"table_catalog": s.Database, "table_schema": schema,
			"table_name": t.Name, "column_name": k, "constraint_catalog": s.Database, "constraint_schema": schema, "constraint_name": name})
	}
}
