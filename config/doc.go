// Package config loads and validates dpproxy's policy file: where the
// front ends listen, which backend holds the data, where the privacy-budget
// ledger lives, the default privacy parameters, the analysts with their
// password verifiers and budgets, and which tables are protected (only
// differentially private aggregates leave) or public.
//
// Load reads a file, Parse a byte slice. Both decode with gopkg.in/yaml.v3
// through yaml.Node, so every problem is reported with the file, line,
// column and field path, for example
//
//	policy.yaml:14:17: protected_tables[1].columns[2].bounds: lo (500) is greater than hi (10); expected [lo, hi] with lo ≤ hi
//
// Unknown keys are errors, so a misspelt setting never silently falls back
// to its default. All problems are collected and returned together as a
// *ValidationError (at most MaxErrors of them, sorted by position).
//
// A policy file looks like this; only backend is required, and analysts
// and tables are needed for dpproxy to be useful:
//
//	listen:
//	  postgres: 127.0.0.1:5433      # default; "" turns it off
//	  mysql: 127.0.0.1:3307         # default off
//	backend:
//	  kind: postgres                # postgres | sqlite | mysql
//	  dsn: postgres://dpproxy@localhost:5432/clinic   # postgres, mysql
//	  # path: clinic.db             # sqlite; relative to this file
//	  max_conns: 10                 # default 10, at most 1000
//	  # pipeline_lanes: 2           # postgres, mysql; default one per processor at start, ≤ max_conns/2; 0 off
//	ledger:
//	  path: dpproxy-ledger.db       # default; relative to this file
//	defaults:
//	  epsilon: 0.1                  # per query; default 0.1
//	  delta: 1e-6                   # per query; default 1e-6
//	  max_epsilon_per_query: 1      # default max(1, epsilon)
//	  max_groups_per_unit: 1        # L0; default 1
//	  max_rows_per_unit: 1          # Linf; default 1
//	  neighbouring: add_remove      # add_remove | replace
//	cache:                          # repeated queries get the same answer, free
//	  size: 1000                    # answers kept; default 1000, 0 = off
//	  ttl: 1h                       # how long an answer is reused; default 1h
//	analysts:
//	  - name: alice
//	    password:                   # paste the output of `dpproxy passwd`
//	      scram_sha_256: "SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>"
//	      mysql_native_password: "*<40 hex digits>"
//	      caching_sha2_password: <64 hex digits>
//	    budget:
//	      epsilon: 10
//	      delta: 1e-5               # default 0
//	teams:                          # optional
//	  - name: research
//	    analysts: [alice]           # their charges count against the team too
//	    budget: {epsilon: 15}
//	protected_tables:
//	  - schema: public              # optional
//	    name: visits
//	    privacy_unit: patient_id    # a listed column, or "row", or a path:
//	                                # {via: visit_id, references: visits.visit_id}
//	    max_groups_per_unit: 3      # optional; from defaults
//	    max_rows_per_unit: 5        # optional; from defaults
//	    columns:
//	      - {name: patient_id, type: bigint}
//	      - {name: clinic, type: text, group_by: true, keys: [north, south]}
//	      - {name: cost, type: numeric, bounds: [0, 500]}
//	public_tables:
//	  - clinics
//	  - public.regions
//	  - {schema: ref, name: icd10}
//
// When the database declares a table's privacy unit column its primary
// key (read at start: ProtectedTable.UnitIsKey), each unit is one row, and
// a query of that table alone needs no per-unit bounding step.
//
// A privacy unit path names the column that references another protected
// table: its privacy unit (the values are the units) or its primary key
// (the row belongs to the referenced row's person; Policy.UnitHops lists
// the joins). Every privacy unit of a policy identifies people in one
// space: the same value is the same person in every protected table, which
// is what joins on the unit rely on.
//
// Column types are int, bigint, float, numeric, text, date, timestamp and
// bool. The policy holds password verifiers, never passwords; NewVerifiers
// derives them (it is what `dpproxy passwd` prints), and Verifiers' SCRAM,
// MySQLNative and CachingSHA2 methods return the forms parsed at load time.
//
// A loaded Policy is the effective policy: defaults are filled in, paths
// are resolved, and marshalling it with yaml.v3 gives a file that loads to
// the same policy.
package config
