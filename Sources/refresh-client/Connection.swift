import ArgumentParser
import AsyncHTTPClient
import Foundation
import OpenAPIAsyncHTTPClient
import RefreshClient

/// The options every command shares: where the server is, the token to show it, the feed.
struct ServerOptions: ParsableArguments {
    @Option(help: "The server's root URL (default: $PTR_SERVER, else http://127.0.0.1:8080).")
    var server: String?

    @Option(help: "A token, sent as `Authorization: Bearer` (default: $PTR_TOKEN, which scripts should prefer).")
    var token: String?

    @Option(help: "The feed.")
    var feed = "main"

    static let defaultServer = "http://127.0.0.1:8080"

    func validate() throws {
        _ = try serverURL()
    }

    func serverURL() throws -> URL {
        let text = server ?? ProcessInfo.processInfo.environment["PTR_SERVER"] ?? Self.defaultServer
        guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
            throw ValidationError("--server must be an http or https URL such as \(Self.defaultServer), not '\(text)'")
        }
        return url
    }

    /// A command line shows its arguments to every user of the machine; the environment
    /// does not, so a token is read from there unless given.
    var resolvedToken: String? {
        let token = token ?? ProcessInfo.processInfo.environment["PTR_TOKEN"]
        return token?.isEmpty == true ? nil : token
    }

    /// Runs `body` with a client on an HTTP client of its own, shut down however `body` ends
    /// (an HTTP client left running is a programming error AsyncHTTPClient reports); a
    /// failure comes out as a ``Failure``.
    func withClient<Result: Sendable>(_ body: (RefreshClient) async throws -> Result) async throws -> Result {
        let url = try serverURL()
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(timeout: .init(connect: .seconds(5))))
        let client = RefreshClient(
            serverURL: url, transport: AsyncHTTPClientTransport(configuration: .init(client: http)), token: resolvedToken)
        let outcome: Swift.Result<Result, any Error>
        do {
            outcome = .success(try await body(client))
        } catch {
            outcome = .failure(error)
        }
        try? await http.shutdown()
        switch outcome {
        case .success(let result): return result
        case .failure(let error as ExitCode): throw error
        case .failure(let error): throw Failure(error, server: url)
        }
    }
}

/// How a command failed: said in one line on standard error, with the exit status the help
/// text promises.
struct Failure: Error {
    static let refusedCode: Int32 = 1
    static let unreachableCode: Int32 = 3
    static let timedOutCode: Int32 = 4

    var message: String
    var code: Int32

    init(message: String, code: Int32) {
        self.message = message
        self.code = code
    }

    init(_ error: any Error, server: URL) {
        switch error {
        case let failure as Failure:
            self = failure
        case is OutputClosed:
            self.init(message: "", code: 0)
        case let refused as RefreshError where refused.status == 0:
            let reason = Self.firstLine(refused.message).replacingOccurrences(of: "the server cannot be reached: ", with: "")
            self.init(message: "cannot reach \(server.absoluteString): \(reason)", code: Self.unreachableCode)
        case let refused as RefreshError:
            self.init(message: "\(refused.status) \(refused.code): \(Self.firstLine(refused.message))", code: Self.refusedCode)
        default:
            self.init(message: Self.firstLine("\(error)"), code: Self.refusedCode)
        }
    }

    private static func firstLine(_ text: String) -> String {
        String(text.split(whereSeparator: \.isNewline).first ?? "")
    }
}

extension AsyncParsableCommand {
    /// Runs a command's work: a ``Failure`` is printed as one line on standard error and ends
    /// the program with its status.
    func reporting(_ work: () async throws -> Void) async throws {
        // A closed standard output (`| head`) is then an error a write reports, which ends the
        // command quietly after closing its session, on every system (NIO ignores SIGPIPE
        // process-wide only on Linux).
        signal(SIGPIPE, SIG_IGN)
        do {
            try await work()
        } catch let failure as Failure {
            guard failure.code != 0 else { return }
            FileHandle.standardError.write(Data("refresh-client: \(failure.message)\n".utf8))
            throw ExitCode(failure.code)
        } catch is OutputClosed {
            return
        }
    }
}
