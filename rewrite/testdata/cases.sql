-- name: count_star
SELECT COUNT(*) FROM visits
-- name: count_col_where
SELECT COUNT(cost) AS n FROM visits WHERE diagnosis = 'A' AND visit_date >= '2024-06-01'
-- name: sum_avg
SELECT SUM(cost), AVG(cost) FROM visits WHERE cost BETWEEN 10 AND 500 OR note IS NULL
-- name: group_by_keys
SELECT diagnosis, COUNT(*), AVG(nights) FROM visits GROUP BY diagnosis
-- name: group_by_two
SELECT "diagnosis", "clinic_id", COUNT(*) AS "visits" FROM "visits" GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 4
-- name: where_in_like_not
SELECT SUM(score) FROM visits WHERE diagnosis IN ('A', 'B') AND NOT (note LIKE 'x%') AND clinic_id <> -3
-- name: quoted_strings
SELECT COUNT(*) FROM visits WHERE note = 'it''s' OR note = 'back\slash'
-- name: row_privacy
SELECT COUNT(*), SUM(income), AVG(age) FROM people WHERE age > 17
-- name: row_privacy_grouped
SELECT sex, COUNT(*) FROM people GROUP BY sex
-- name: alias_table
SELECT COUNT(v.cost) FROM visits AS v WHERE v.nights > 2
-- name: public_passthrough
SELECT name, city FROM clinics WHERE city = 'Oslo' ORDER BY name LIMIT 5
-- name: count_distinct_unit
SELECT diagnosis, COUNT(DISTINCT patient_id) AS patients FROM visits GROUP BY diagnosis
-- name: variance_family
SELECT VAR_POP(cost), VARIANCE(nights), STDDEV_POP(score), STDDEV(cost) FROM visits WHERE visit_date < '2025-01-01'
-- name: partition_selection
SELECT region, COUNT(*), SUM(cost) FROM visits GROUP BY region
-- name: partition_selection_mixed_keys
SELECT region, diagnosis, COUNT(*) FROM visits GROUP BY region, diagnosis
-- name: replace_ungrouped
-- neighbouring: replace
SELECT COUNT(*), SUM(score), AVG(cost), VAR_POP(nights), COUNT(DISTINCT patient_id) FROM visits
-- name: replace_grouped
-- neighbouring: replace
SELECT diagnosis, COUNT(*), SUM(score), AVG(cost) FROM visits GROUP BY diagnosis
-- name: replace_partition_selection
-- neighbouring: replace
SELECT region, COUNT(*), SUM(cost) FROM visits GROUP BY region
-- name: replace_row_privacy
-- neighbouring: replace
SELECT sex, COUNT(*), SUM(income) FROM people GROUP BY sex
-- name: casts_of_constants
SELECT COUNT(*) FROM "public"."visits" WHERE visit_date >= '2024-06-01'::date AND cost > CAST('10.5' AS numeric) AND note <> 5::text
-- name: public_casts_and_offset
SELECT name::text AS n, CAST(city AS varchar(20)), '2024-01-01'::date AS d FROM clinics ORDER BY 1 LIMIT 5 OFFSET 2
-- name: public_cross_join
SELECT COUNT(*) FROM clinics a, clinics b, clinics c WHERE a.city = b.city
-- name: derived_table_metabase
SELECT "source"."diagnosis" AS "diagnosis", "source"."count" AS "count" FROM (SELECT "public"."visits"."diagnosis" AS "diagnosis", COUNT(*) AS "count" FROM "public"."visits" GROUP BY "public"."visits"."diagnosis" ORDER BY "public"."visits"."diagnosis" ASC) AS "source" ORDER BY "source"."count" DESC LIMIT 1048575
-- name: time_buckets
SELECT date_trunc('month', visit_date) AS month, EXTRACT(YEAR FROM visit_date), COUNT(*) FROM visits GROUP BY 1, EXTRACT(YEAR FROM visit_date) ORDER BY month
-- name: quoted_numbers
SELECT COUNT(*) FROM visits WHERE nights >= '2' AND cost BETWEEN '10' AND ' 99.5' AND clinic_id IN ('1', 2)
-- name: case_and_coalesce
SELECT COUNT(*) FROM visits WHERE COALESCE(note, 'none') <> 'none' AND CASE WHEN nights > 3 THEN 'long' WHEN nights IS NULL THEN 'unknown' ELSE 'short' END = 'long' AND CASE diagnosis WHEN 'A' THEN cost ELSE 0 END > 100
-- name: count_text_col
SELECT diagnosis, COUNT(note) FROM visits GROUP BY diagnosis
-- name: post_processing
SELECT diagnosis, COUNT(*) * 5 AS five, ROUND(AVG(cost), 2) AS avg_cost, SUM(cost) / COUNT(*) AS mean, 3 AS three FROM visits GROUP BY diagnosis HAVING COUNT(*) > 1 AND diagnosis <> 'C' ORDER BY five DESC
-- name: aggregate_spellings
SELECT VAR(cost), STDEV(nights), ROUND(VARP(cost)) FROM visits
-- name: conditional_aggregation
SELECT diagnosis, SUM(CASE WHEN nights > 2 THEN cost ELSE 0 END) AS long_cost, COUNT(CASE WHEN note IS NOT NULL THEN 1 END), AVG(CASE WHEN cost >= 100 THEN score END) FROM visits GROUP BY diagnosis
-- name: distinct_keys_selection
SELECT DISTINCT region FROM visits
-- name: group_by_case
SELECT CASE WHEN nights < 3 THEN 'short' WHEN nights < 7 THEN 'medium' ELSE 'long' END AS stay, COUNT(*), AVG(cost) FROM visits GROUP BY stay
-- name: quantiles
SELECT MEDIAN(cost), percentile_cont(0.9) WITHIN GROUP (ORDER BY cost DESC) AS p10, MIN(nights), MAX(nights), COUNT(*) FROM visits WHERE diagnosis = 'A'
-- name: quantiles_grouped
SELECT region, percentile_disc(0.25) WITHIN GROUP (ORDER BY score) AS q1, MEDIAN(score) FROM visits GROUP BY region
-- name: quantiles_public_keys
SELECT diagnosis, MEDIAN(nights) AS median_nights FROM visits GROUP BY diagnosis
-- name: quantiles_row_privacy
SELECT sex, MEDIAN(age) FROM people GROUP BY sex
-- name: group_by_bins
SELECT FLOOR(nights / 5) * 5 AS band, COUNT(*), width_bucket(score, -5, 5, 4) FROM visits GROUP BY band, width_bucket(score, -5, 5, 4)
-- name: group_by_bins_selection
SELECT clinic_id / 10 * 10, COUNT(*) FROM visits GROUP BY 1
-- name: count_distinct_values
SELECT COUNT(DISTINCT diagnosis), COUNT(DISTINCT note), COUNT(*) FROM visits
-- name: count_distinct_values_grouped
SELECT region, COUNT(DISTINCT diagnosis) AS diagnoses FROM visits GROUP BY region
-- name: selection_threshold_units
SELECT region, COUNT(DISTINCT patient_id) AS patients, AVG(cost) FROM visits GROUP BY region
-- name: selection_threshold_rows
SELECT married, COUNT(*) FROM surveys GROUP BY married
-- name: total_rows_bound
SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city
-- name: total_rows_bound_selection
SELECT ward, COUNT(*) FROM legs GROUP BY ward
-- name: top_k
SELECT region, COUNT(*) AS visits, AVG(cost) FROM visits GROUP BY region ORDER BY COUNT(*) DESC LIMIT 3
-- name: excess_ungrouped
-- intervals
SELECT COUNT(*), SUM(cost), AVG(cost) FROM visits
-- name: excess_public_keys
-- intervals
SELECT diagnosis, COUNT(*), COUNT(DISTINCT patient_id), AVG(nights) FROM visits GROUP BY diagnosis
-- name: excess_selection
-- intervals
SELECT region, COUNT(*), SUM(cost) FROM visits GROUP BY region
-- name: excess_total_cap
-- intervals
SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city
-- name: excess_total_cap_selection
-- intervals
SELECT ward, COUNT(*) FROM legs GROUP BY ward
-- name: excess_row_privacy
-- intervals
SELECT sex, COUNT(*), SUM(income), AVG(age) FROM people GROUP BY sex
-- name: excess_conditional
-- intervals
SELECT SUM(CASE WHEN nights > 2 THEN cost ELSE 0 END), VAR_POP(cost) FROM visits
-- name: excess_replace
-- neighbouring: replace
-- intervals
SELECT region, COUNT(DISTINCT patient_id), SUM(cost) FROM visits GROUP BY region
-- name: cte_filter
WITH recent AS (SELECT patient_id, cost AS c FROM visits WHERE visit_date >= '2024-01-01') SELECT COUNT(*), AVG(c) FROM recent WHERE c > 10
-- name: cte_aggregate_post_processed
WITH d AS (SELECT diagnosis, COUNT(*) AS n FROM visits GROUP BY diagnosis) SELECT diagnosis, n FROM d ORDER BY n DESC LIMIT 3
-- name: derived_filter
SELECT r.diagnosis, COUNT(*) AS visits FROM (SELECT * FROM visits v WHERE v.cost > 100) AS r GROUP BY r.diagnosis
-- name: cte_chain
WITH a AS (SELECT diagnosis AS dx, nights FROM visits WHERE nights > 0), b AS (SELECT dx, nights AS n FROM a WHERE dx <> 'B') SELECT dx, SUM(n) FROM b GROUP BY dx
-- name: in_public_subquery
SELECT COUNT(*) FROM visits WHERE region IN (SELECT LOWER(SUBSTR(name, 1, 1)) FROM public.clinics WHERE city = 'Oslo')
-- name: join_public_dimension
SELECT c.city, COUNT(*), AVG(v.cost) FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY c.city
-- name: left_join_using
SELECT COUNT(*), COUNT(c.name) FROM visits LEFT JOIN clinics c USING (clinic_id) WHERE c.city = 'Oslo'
-- name: cte_over_join
WITH vc AS (SELECT v.cost, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) SELECT city, SUM(cost) FROM vc GROUP BY city
-- name: join_protected_on_unit
SELECT s.ward, COUNT(*), SUM(v.cost), COUNT(DISTINCT s.patient_id) FROM visits v JOIN stays s USING (patient_id) GROUP BY s.ward
-- name: exists_public
SELECT diagnosis, COUNT(*) FROM visits v WHERE EXISTS (SELECT 1 FROM clinics c WHERE c.clinic_id = v.clinic_id AND c.city = 'Oslo') GROUP BY diagnosis
-- name: unit_path_key
SELECT COUNT(*), SUM(mg) FROM doses
-- name: unit_path_key_grouped
SELECT d.drug, COUNT(*) FROM doses d GROUP BY d.drug
-- name: unit_path_join_along_key
SELECT a.ward, COUNT(*), COUNT(DISTINCT a.patient_id) FROM doses d JOIN admissions a ON d.admission_id = a.admission_id GROUP BY a.ward
-- name: unit_path_join_from_referenced
SELECT COUNT(*), SUM(d.mg) FROM admissions a JOIN doses d ON d.admission_id = a.admission_id
-- name: grafana_time_filter
SELECT date_trunc('month', visit_date) AS "time", COUNT(*) AS "visits" FROM visits WHERE visit_date BETWEEN '2024-01-01T00:00:00Z' AND '2025-12-31T23:59:59.999Z' AND visit_date <> '2024-03-01T10:30:00+02:00' GROUP BY 1 ORDER BY 1
-- name: cte_aggregate_over_join_cte
WITH enriched AS (SELECT v.patient_id, v.cost, c.city FROM visits v LEFT JOIN clinics c ON v.clinic_id = c.clinic_id), per_city AS (SELECT city, COUNT(*) AS n, SUM(cost) AS total FROM enriched GROUP BY city) SELECT city, n, total FROM per_city ORDER BY n DESC
-- name: outer_query_computes_and_filters
WITH per_city AS (SELECT c.city, COUNT(*) AS n, SUM(v.cost) AS total FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id GROUP BY c.city) SELECT city, total / n AS mean, n FROM per_city WHERE n > 100 ORDER BY mean DESC LIMIT 5
-- name: superset_time_filter
SELECT DATE_TRUNC('month', visit_date) AS __timestamp, SUM(cost) AS "SUM(cost)" FROM (SELECT v.cost, v.visit_date, c.city FROM visits v JOIN clinics c ON v.clinic_id = c.clinic_id) AS virtual_table WHERE visit_date >= TO_TIMESTAMP('2024-01-01 00:00:00.000000', 'YYYY-MM-DD HH24:MI:SS.US') AND visit_date < TO_DATE('2025-06-30', 'YYYY-MM-DD') GROUP BY DATE_TRUNC('month', visit_date) LIMIT 50000
-- name: text_columns_compared
SELECT COUNT(*) FROM visits WHERE diagnosis = note AND region BETWEEN note AND diagnosis AND note IN ('x', region)
-- name: key_unit_lookup
-- unit is key
SELECT COUNT(*) FROM members WHERE member_id = 42
-- name: key_unit_grouped_keys
-- unit is key
SELECT tier, COUNT(*), AVG(spend), VARIANCE(age) FROM members GROUP BY tier
-- name: key_unit_selection
-- unit is key
SELECT city, COUNT(*), SUM(spend), COUNT(DISTINCT member_id) FROM members GROUP BY city
-- name: key_unit_quantile_distinct
-- unit is key
SELECT tier, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY age), COUNT(DISTINCT city) FROM members GROUP BY tier
-- name: key_unit_join_public
-- unit is key
SELECT c.city, COUNT(*) FROM members m JOIN clinics c ON c.clinic_id = m.clinic_id GROUP BY c.city
-- name: key_unit_not_declared
SELECT tier, COUNT(*), AVG(spend) FROM members GROUP BY tier
-- name: not_null_counted_by_rows
-- columns not null
SELECT diagnosis, COUNT(*), AVG(cost), SUM(nights) FROM visits GROUP BY diagnosis
-- name: not_null_outer_joined_side
-- columns not null
SELECT s.ward, COUNT(*), AVG(s.cost), SUM(v.cost) FROM stays s LEFT JOIN visits v USING (patient_id) GROUP BY s.ward
-- name: total_bound_rows_form
-- columns not null
-- rows per unit as total
SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city
-- name: total_bound_rows_form_nullable_unit
-- rows per unit as total
SELECT city, COUNT(*), SUM(km) FROM trips GROUP BY city
