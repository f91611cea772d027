// What a JDBC tool learns from DatabaseMetaData (the calls DBeaver, BI
// tools and ORMs make before their first query), printed one line per
// fact so that two databases' answers can be compared: schemas, tables,
// columns, primary keys, imported keys and indexes of the schema named.
//
//   java -cp postgresql.jar:. CatalogJdbc 'jdbc:postgresql://127.0.0.1:5432/demo' user password public
//   java -cp mariadb-java-client.jar:. CatalogJdbc 'jdbc:mariadb://127.0.0.1:3306/demo' user password demo
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public class CatalogJdbc {
    public static void main(String[] args) throws Exception {
        String schema = args[3];
        boolean mysql = args[0].startsWith("jdbc:mariadb") || args[0].startsWith("jdbc:mysql");
        String catalog = mysql ? schema : null;
        String schemaPattern = mysql ? null : schema;
        List<String> out = new ArrayList<>();
        try (Connection conn = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData md = conn.getMetaData();
            try (ResultSet rs = mysql ? md.getCatalogs() : md.getSchemas()) {
                while (rs.next()) {
                    String s = rs.getString(1);
                    if (s.equals(schema)) out.add("schema " + s);
                }
            }
            List<String> tables = new ArrayList<>();
            try (ResultSet rs = md.getTables(catalog, schemaPattern, "%", new String[] {"TABLE", "VIEW"})) {
                while (rs.next()) {
                    tables.add(rs.getString("TABLE_NAME"));
                    out.add("table " + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE"));
                }
            }
            for (String t : tables) {
                try (ResultSet rs = md.getColumns(catalog, schemaPattern, t, "%")) {
                    while (rs.next()) {
                        out.add("column " + t + "." + rs.getString("COLUMN_NAME") + " " + rs.getInt("DATA_TYPE")
                            + " " + rs.getString("TYPE_NAME").toLowerCase() + " nullable=" + rs.getInt("NULLABLE")
                            + " pos=" + rs.getInt("ORDINAL_POSITION"));
                    }
                }
                try (ResultSet rs = md.getPrimaryKeys(catalog, schemaPattern, t)) {
                    while (rs.next()) {
                        out.add("pk " + t + "." + rs.getString("COLUMN_NAME") + " seq=" + rs.getInt("KEY_SEQ"));
                    }
                }
                try (ResultSet rs = md.getImportedKeys(catalog, schemaPattern, t)) {
                    while (rs.next()) {
                        out.add("fk " + t + "." + rs.getString("FKCOLUMN_NAME"));
                    }
                }
                try (ResultSet rs = md.getIndexInfo(catalog, schemaPattern, t, false, true)) {
                    while (rs.next()) {
                        if (rs.getString("COLUMN_NAME") != null) {
                            out.add("index " + t + " " + rs.getString("COLUMN_NAME") + " unique=" + !rs.getBoolean("NON_UNIQUE"));
                        }
                    }
                }
            }
        }
        Collections.sort(out);
        for (String line : out) System.out.println(line);
    }
}
