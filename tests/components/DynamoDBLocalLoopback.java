// Starts Amazon's DynamoDB Local (the jar inside npm amplify-dynamodb-simulator) bound to one
// address only. DynamoDB Local 1.25.1 has no -host option: its DynamoDBProxyServer builds
// `new org.eclipse.jetty.server.Server(port)`, whose connector listens on every interface
// (0.0.0.0 and ::). This launcher takes the same command-line arguments as the jar
// (-inMemory -port P -disableTelemetry ...), lets DynamoDB Local build its server exactly as
// `java -jar DynamoDBLocal.jar` would, sets the host of its Jetty connector before the
// server starts, then starts it.
//
// Run (no build step; Java 11+ source-file mode, or javac once and run the class):
//   java -Djava.library.path=<dir>/DynamoDBLocal_lib -Daov.ddb.host=127.0.0.1 \
//        -cp <dir>/DynamoDBLocal.jar tests/components/DynamoDBLocalLoopback.java \
//        -inMemory -port <p> -disableTelemetry
// Used by scripts/components.sh (start_dynamodb_local).

import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class DynamoDBLocalLoopback {
    public static void main(String[] args) throws Exception {
        String host = System.getProperty("aov.ddb.host", "127.0.0.1");
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field f = DynamoDBProxyServer.class.getDeclaredField("server");
        f.setAccessible(true);
        Server jetty = (Server) f.get(proxy);
        Connector[] connectors = jetty.getConnectors();
        if (connectors.length == 0) {
            throw new IllegalStateException("DynamoDB Local built a Jetty server without connectors");
        }
        for (Connector c : connectors) {
            if (!(c instanceof ServerConnector)) {
                throw new IllegalStateException("unexpected Jetty connector " + c.getClass());
            }
            ((ServerConnector) c).setHost(host);
        }
        proxy.start();
        for (Connector c : connectors) {
            ServerConnector sc = (ServerConnector) c;
            System.out.println("DynamoDBLocalLoopback: listening on " + sc.getHost() + ":" + sc.getLocalPort());
        }
    }
}
