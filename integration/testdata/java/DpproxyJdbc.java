// A JDBC client (MariaDB Connector/J, or any driver registered for the
// URL) against dpproxy's MySQL front end: connect, the MySQL Connector/J
// startup probe, DP aggregates through PreparedStatement, a refused raw
// read on the same connection, then a good query. It prints one
// "key=value" line per check, which the Go test reads.
//
//   java -cp mariadb-java-client.jar:. DpproxyJdbc 'jdbc:mariadb://127.0.0.1:3307/demo' analyst analyst
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class DpproxyJdbc {
    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0], args[1], args[2])) {
            DatabaseMetaData md = conn.getMetaData();
            System.out.println("server=" + md.getDatabaseProductVersion());
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery(
                     "/* mysql-connector-java-8.0.33 */SELECT @@session.auto_increment_increment AS auto_increment_increment, "
                     + "@@character_set_client AS character_set_client, @@character_set_connection AS character_set_connection, "
                     + "@@character_set_results AS character_set_results, @@character_set_server AS character_set_server, "
                     + "@@collation_server AS collation_server, @@collation_connection AS collation_connection, "
                     + "@@init_connect AS init_connect, @@interactive_timeout AS interactive_timeout, @@license AS license, "
                     + "@@lower_case_table_names AS lower_case_table_names, @@max_allowed_packet AS max_allowed_packet, "
                     + "@@net_write_timeout AS net_write_timeout, @@performance_schema AS performance_schema, "
                     + "@@sql_mode AS sql_mode, @@system_time_zone AS system_time_zone, @@time_zone AS time_zone, "
                     + "@@transaction_isolation AS transaction_isolation, @@wait_timeout AS wait_timeout")) {
                rs.next();
                System.out.println("probe.auto_increment_increment=" + rs.getInt("auto_increment_increment"));
                System.out.println("probe.max_allowed_packet=" + rs.getLong("max_allowed_packet"));
                System.out.println("probe.columns=" + rs.getMetaData().getColumnCount());
            }
            try (Statement st = conn.createStatement()) {
                st.execute("SET NAMES utf8mb4");
                st.execute("SET autocommit=1");
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT COUNT(*) FROM patients WHERE age >= ? AND sex = ?")) {
                ps.setInt(1, 18);
                ps.setString(2, "F");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    System.out.println("adultWomen=" + rs.getLong(1));
                }
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT sex, AVG(income) FROM patients WHERE age BETWEEN ? AND ? GROUP BY sex ORDER BY sex")) {
                ps.setInt(1, 30);
                ps.setInt(2, 60);
                try (ResultSet rs = ps.executeQuery()) {
                    StringBuilder sb = new StringBuilder();
                    while (rs.next()) {
                        sb.append(rs.getString(1)).append(':').append(rs.getDouble(2) > 0 ? "positive" : "nonpositive").append(' ');
                    }
                    System.out.println("groups=" + sb.toString().trim());
                }
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT * FROM patients WHERE age > ?")) {
                ps.setInt(1, 40);
                ps.executeQuery();
                System.out.println("rawRead=allowed");
            } catch (SQLException e) {
                System.out.println("rawRead=" + e.getErrorCode() + "/" + e.getSQLState());
            }
            try (PreparedStatement ps = conn.prepareStatement(
                     "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME")) {
                ps.setString(1, conn.getCatalog());
                StringBuilder sb = new StringBuilder();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        sb.append(rs.getString(1)).append(' ');
                    }
                }
                System.out.println("tables=" + sb.toString().trim());
            }
            try (PreparedStatement ps = conn.prepareStatement("SELECT COUNT(*) FROM clinics WHERE clinic_id <= ?")) {
                ps.setInt(1, 5);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    System.out.println("afterError=" + rs.getLong(1));
                }
            }
        }
    }
}
