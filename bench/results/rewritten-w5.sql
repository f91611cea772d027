SELECT COUNT(*) FROM (SELECT 1 AS "dp_one" FROM "patients" WHERE ("patient_id" = {i})) AS "dp_rows"
