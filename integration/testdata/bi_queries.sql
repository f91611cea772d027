-- DP questions as BI tools, semantic layers and ORMs write them over joins
-- and CTEs, from the tools' SQL generators (Metabase's MBQL compiler,
-- Superset's virtual datasets and time filters, Grafana's macros,
-- Tableau's TDE SQL, dbt-style CTE models). Each must be answered, with
-- rows, through dpproxy on PostgreSQL and MariaDB (TestBIQueriesOverJoins).
-- Blocks: "-- client: NAME" then statements ending with ";" at the end of
-- a line; a client named "... (MySQL)" is sent through the MySQL front end.

-- client: Metabase
SELECT "Clinics"."city" AS "Clinics__city", COUNT(*) AS "count" FROM "public"."visits" LEFT JOIN "public"."clinics" AS "Clinics" ON "public"."visits"."clinic_id" = "Clinics"."clinic_id" GROUP BY "Clinics"."city" ORDER BY "Clinics"."city" ASC;
SELECT "source"."Clinics__city" AS "Clinics__city", "source"."count" AS "count" FROM (SELECT "Clinics"."city" AS "Clinics__city", COUNT(*) AS "count" FROM "public"."visits" LEFT JOIN "public"."clinics" AS "Clinics" ON "public"."visits"."clinic_id" = "Clinics"."clinic_id" GROUP BY "Clinics"."city" ORDER BY "Clinics"."city" ASC) AS "source" ORDER BY "source"."count" DESC, "source"."Clinics__city" ASC LIMIT 10;
SELECT DATE_TRUNC('month', "public"."visits"."visit_date") AS "visit_date", "Clinics"."city" AS "Clinics__city", COUNT(*) AS "count" FROM "public"."visits" LEFT JOIN "public"."clinics" AS "Clinics" ON "public"."visits"."clinic_id" = "Clinics"."clinic_id" GROUP BY DATE_TRUNC('month', "public"."visits"."visit_date"), "Clinics"."city" ORDER BY DATE_TRUNC('month', "public"."visits"."visit_date") ASC, "Clinics"."city" ASC;
SELECT "Patients"."sex" AS "Patients__sex", AVG("public"."visits"."cost") AS "avg" FROM "public"."visits" LEFT JOIN "public"."patients" AS "Patients" ON "public"."visits"."patient_id" = "Patients"."patient_id" GROUP BY "Patients"."sex" ORDER BY "Patients"."sex" ASC;

-- client: Superset
SELECT city AS city, COUNT(*) AS count FROM (SELECT v.cost, v.visit_date, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) AS virtual_table GROUP BY city ORDER BY count DESC LIMIT 10000;
SELECT DATE_TRUNC('month', visit_date) AS __timestamp, SUM(cost) AS "SUM(cost)" FROM (SELECT v.cost, v.visit_date, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) AS virtual_table WHERE visit_date >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') AND visit_date < TO_TIMESTAMP('2025-07-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') GROUP BY DATE_TRUNC('month', visit_date) LIMIT 50000;

-- client: Grafana
SELECT date_trunc('month', v.visit_date) AS "time", c.city AS metric, count(*) AS value FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id WHERE v.visit_date BETWEEN '2024-01-01T00:00:00Z' AND '2025-12-31T23:59:59Z' GROUP BY 1, 2 ORDER BY 1, 2;

-- client: Tableau
SELECT "clinics"."city" AS "city", SUM("visits"."cost") AS "sum:cost:ok", COUNT(1) AS "cnt:visits:ok" FROM "public"."visits" "visits" INNER JOIN "public"."clinics" "clinics" ON ("visits"."clinic_id" = "clinics"."clinic_id") GROUP BY 1;

-- client: dbt model
WITH visits_enriched AS (SELECT v.patient_id, v.cost, c.city FROM visits v LEFT JOIN clinics c ON v.clinic_id = c.clinic_id), per_city AS (SELECT city, COUNT(*) AS n, SUM(cost) AS total FROM visits_enriched GROUP BY city) SELECT city, n, total / n AS avg_cost FROM per_city WHERE n > 0 ORDER BY n DESC;
WITH rx AS (SELECT r.days_supply, v.diagnosis FROM prescriptions r JOIN visits v ON r.visit_id = v.visit_id) SELECT diagnosis, COUNT(*) AS prescriptions, AVG(days_supply) AS mean_days FROM rx GROUP BY diagnosis ORDER BY prescriptions DESC;

-- client: Metabase (MySQL)
SELECT `Clinics`.`city` AS `Clinics__city`, COUNT(*) AS `count` FROM `visits` LEFT JOIN `clinics` AS `Clinics` ON `visits`.`clinic_id` = `Clinics`.`clinic_id` GROUP BY `Clinics`.`city` ORDER BY `Clinics`.`city` ASC;

-- client: Superset (MySQL)
SELECT city AS city, COUNT(*) AS count FROM (SELECT v.cost, v.visit_date, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) AS virtual_table WHERE visit_date >= STR_TO_DATE('2024-01-01 00:00:00.000000', '%Y-%m-%d %H:%i:%s.%f') GROUP BY city ORDER BY count DESC LIMIT 10000;
