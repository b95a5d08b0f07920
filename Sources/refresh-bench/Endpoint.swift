import ArgumentParser

/// Where one server instance listens.
struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int

    var description: String { "\(host):\(port)" }

    /// `HOST:PORT`, or `[V6]:PORT`.
    init?(_ text: Substring) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            return nil
        }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { return nil }
        self.host = String(host)
        self.port = port
    }

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}

/// A comma-separated list of instances, `HOST:PORT,HOST:PORT,…`: the sessions of a run are
/// dealt over them in turn (session i on instance i mod n), as a front spreads pages.
struct Endpoints: ExpressibleByArgument, Sendable {
    var all: [Endpoint]

    init?(argument: String) {
        var all: [Endpoint] = []
        for part in argument.split(separator: ",") {
            guard let endpoint = Endpoint(part) else { return nil }
            all.append(endpoint)
        }
        guard !all.isEmpty else { return nil }
        self.all = all
    }

    init(_ all: [Endpoint]) {
        self.all = all
    }

    /// The instance that holds session (or stream, or publisher) `index`.
    subscript(index: Int) -> Endpoint { all[index % all.count] }

    var count: Int { all.count }
}
