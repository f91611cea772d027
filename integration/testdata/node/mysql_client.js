// mysql2 against dpproxy's MySQL front end: connect (caching_sha2_password
// or mysql_native_password), discover tables and columns through
// information_schema and SHOW, run DP aggregates as server-side prepared
// statements with parameters (COM_STMT_PREPARE / EXECUTE, binary
// protocol), survive a refused raw read, and print a JSON report that the
// Go test checks.
//
//   node mysql_client.js 'mysql://analyst:analyst@127.0.0.1:3307/demo'
const mysql = require('mysql2/promise');

async function main() {
  const url = new URL(process.argv[2]);
  const database = url.pathname.slice(1);
  const conn = await mysql.createConnection({
    host: url.hostname,
    port: Number(url.port),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database,
    supportBigNumbers: true,
    bigNumberStrings: false,
  });
  const report = {};

  const [tables] = await conn.execute(
    'SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME', [database]);
  report.tables = tables.map((r) => r.TABLE_NAME);
  const [columns] = await conn.execute(
    'SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION',
    [database, 'patients']);
  report.patientColumns = columns.map((r) => r.COLUMN_NAME + ':' + r.DATA_TYPE);
  const [shown] = await conn.query('SHOW TABLES');
  report.showTables = shown.map((r) => Object.values(r)[0]);

  const [count, countFields] = await conn.execute('SELECT COUNT(*) AS n FROM patients WHERE age >= ?', [18]);
  report.adults = Number(count[0].n);
  report.countType = countFields[0].columnType;
  const [grouped] = await conn.execute(
    'SELECT sex, AVG(income) AS avg_income FROM patients WHERE age BETWEEN ? AND ? GROUP BY sex ORDER BY sex', [30, 60]);
  report.groups = grouped.map((r) => r.sex);
  report.avgIncome = grouped.map((r) => Number(r.avg_income));

  try {
    await conn.execute('SELECT * FROM patients WHERE age > ?', [40]);
    report.rawRead = 'allowed';
  } catch (e) {
    report.rawRead = { errno: e.errno, sqlState: e.sqlState };
  }
  try {
    await conn.execute('SELECT * FROM information_schema.NO_SUCH_VIEW WHERE ROUTINE_SCHEMA = ?', [database]);
    report.routines = 'allowed';
  } catch (e) {
    report.routines = { errno: e.errno, sqlState: e.sqlState };
  }
  const [after] = await conn.execute('SELECT COUNT(*) AS n FROM clinics WHERE clinic_id <= ?', [5]);
  report.afterError = Number(after[0].n);
  // The same prepared statement (mysql2 caches it) with other values.
  const [again] = await conn.execute('SELECT COUNT(*) AS n FROM patients WHERE age >= ?', [65]);
  report.seniors = Number(again[0].n);
  await conn.end();
  console.log(JSON.stringify(report));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
