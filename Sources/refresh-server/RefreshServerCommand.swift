import Foundation
import Logging
import RefreshServer
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Reads the settings, from the command line by the settings table (``CommandLineSettings``
/// says why not by ArgumentParser), then serves until SIGTERM or SIGINT.
@main
enum RefreshServerCommand {
    static let overview = "Serves a pull-to-refresh list whose gestures are decided in Swift and pushed over server-sent events."
    static let discussion = """
        Every flag can also be set by an environment variable, PTR_ then the flag's name upper-cased with _ for - \
        (PTR_MAX_STREAMS for --max-streams; lists comma-separated), or by a key of the JSON file given by --config \
        or PTR_CONFIG, named like the flag ({"max-streams": 100, "feed": ["https://example.com/feed.xml"]}). \
        A flag wins over a variable, a variable over the file, the file over the default.
        """

    /// A command line that does not parse is one line on standard error and EX_USAGE (64);
    /// a setting that cannot work is one line and EX_CONFIG (78), which a service manager
    /// can tell from a failure worth restarting for (RestartPreventExitStatus=).
    static func main() async {
        let request: CommandLineSettings.Request
        do {
            request = try CommandLineSettings.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(64)
        }
        guard case .settings(let flags) = request else {
            print(CommandLineSettings.help(command: "refresh-server", overview: overview, discussion: discussion), terminator: "")
            exit(0)
        }
        do {
            try await run(flags: flags)
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(78)
        } catch {
            FileHandle.standardError.write(Data("Error: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(flags: [String: SettingValue]) async throws {
        let sources = try await ConfigurationSources(flags: flags)
        let configuration = try await ServerConfiguration(sources)
        let format = configuration.logFormat

        LoggingSystem.bootstrap { label in
            switch format {
            case .text: LineSafeLogHandler(StreamLogHandler.standardError(label: label))
            case .json: JSONLogHandler(label: label)
            }
        }
        var logger = Logger(label: "refresh-server")
        logger.logLevel = configuration.logLevel
        if let warning = sources.unknownVariablesWarning { logger.warning("\(warning)") }

        let host = configuration.host
        let app = try await RefreshApplication.build(configuration: configuration, logger: logger) { port in
            let url = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
            let line = "refresh-server listening on \(url)"
            // On standard output in either format, whatever the log level: scripts and
            // service managers wait for it to learn the port.
            switch format {
            case .text:
                print(line)
                fflush(nil)
            case .json:
                JSONLogHandler.writeRecord(
                    level: .notice, label: "refresh-server", message: line, source: "refresh_server", fields: ["url": .string(url)],
                    to: STDOUT_FILENO)
            }
        }
        try await ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)).run()
    }
}
