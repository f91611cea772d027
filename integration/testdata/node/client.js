// node-postgres against dpproxy: connect with SCRAM, discover tables,
// run parameterized DP aggregates (pipelined Parse/Bind/Describe/Execute/
// Sync, text format), survive an error, and print a JSON report that the
// Go test checks.
const { Client } = require('pg');

async function main() {
  const client = new Client({ connectionString: process.argv[2] });
  await client.connect();
  const report = {};
  const tables = await client.query(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1");
  report.tables = tables.rows.map((r) => r.table_name);
  // Introspection as node ORMs do it: columns through information_schema
  // with a parameter, the primary key through pg_index and a regclass
  // parameter.
  const columns = await client.query(
    'SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position', ['visits']);
  report.visitColumns = columns.rows.map((r) => r.column_name + ':' + r.data_type);
  const pk = await client.query(
    'SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) ' +
    'WHERE i.indrelid = $1::regclass AND i.indisprimary', ['clinics']);
  report.clinicsKey = pk.rows.map((r) => r.attname);
  const count = await client.query('SELECT COUNT(*) AS n FROM patients WHERE age >= $1', [18]);
  report.adults = Number(count.rows[0].n);
  report.countType = count.fields[0].dataTypeID;
  const grouped = await client.query(
    'SELECT sex, AVG(income) AS avg_income FROM patients WHERE age BETWEEN $1 AND $2 GROUP BY sex ORDER BY sex', [30, 60]);
  report.groups = grouped.rows.map((r) => r.sex);
  report.avgIncome = grouped.rows.map((r) => Number(r.avg_income));
  try {
    await client.query('SELECT * FROM patients WHERE age > $1', [40]);
    report.rawRead = 'allowed';
  } catch (e) {
    report.rawRead = e.code;
  }
  const after = await client.query('SELECT COUNT(*) AS n FROM clinics WHERE clinic_id <= $1', [5]);
  report.afterError = Number(after.rows[0].n);
  await client.end();
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
