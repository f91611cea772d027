SELECT COUNT(*) FROM (SELECT 1 AS "dp_one" FROM "patients" WHERE ("patient_id" = $1::bigint)) AS "dp_rows"
