// swift-tools-version: 6.2
// libFuzzer targets for the server's parsers and its connection layer. The project's own
// modules are compiled here from its sources (Sources/RefreshEngine, Sources/RefreshJSON,
// Sources/RefreshHTTP, Sources/FeedSubset/RefreshFeed and Sources/ServerSubset/RefreshServer
// are links to them) so that they alone are instrumented, and without the parts that need
// PostgreSQL, SQLite, TLS or an HTTP client: a build from scratch then takes minutes, not a
// quarter of an hour.
// See README.md.
import PackageDescription

/// `-sanitize=` for the instrumented modules: "fuzzer,address" by default; "fuzzer" builds
/// and runs faster.
let sanitizers = Context.environment["FUZZ_SANITIZERS"] ?? "fuzzer,address"
let instrumented: [SwiftSetting] = [.unsafeFlags(["-sanitize=\(sanitizers)"])]
let linked: [LinkerSetting] = [.unsafeFlags(["-sanitize=\(sanitizers)"])]

let package = Package(
    name: "swift-pull-to-refresh-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.1.0"..<"5.0.0"),
    ],
    targets: [
        .target(name: "RefreshEngine", swiftSettings: instrumented),
        .target(
            name: "RefreshJSON", dependencies: [.product(name: "NIOCore", package: "swift-nio")], swiftSettings: instrumented),
        // The feed minus its stores on disk and over the network, the upstream fetcher and
        // the listener: nothing the fuzzed paths reach. Stubs/ stands in for what the server
        // still names of them.
        .target(
            name: "RefreshFeed",
            dependencies: ["RefreshJSON"],
            path: "Sources/FeedSubset",
            exclude: [
                "RefreshFeed/Postgres",
                "RefreshFeed/SQLite",
                "RefreshFeed/Upstream",
            ],
            swiftSettings: instrumented
        ),
        .target(
            name: "RefreshHTTP",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: instrumented
        ),
        // The server minus the application that wires the stores and what only it reaches.
        .target(
            name: "RefreshServer",
            dependencies: [
                "RefreshEngine",
                "RefreshFeed",
                "RefreshHTTP",
                "RefreshJSON",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Sources/ServerSubset",
            exclude: [
                "RefreshServer/RefreshApplication.swift",
                "RefreshServer/Configuration/ConfigurationSources.swift",
                "RefreshServer/Connection/EventLoopGroupCloser.swift",
                "RefreshServer/Connection/HTTPService.swift",
                "RefreshServer/Sessions/SessionMaintenance.swift",
            ],
            swiftSettings: instrumented
        ),
        .target(name: "FuzzDriver"),
        // The invariants every target checks, and a reader of HTTP/1.1 responses.
        .target(
            name: "FuzzSupport",
            dependencies: ["RefreshFeed", "RefreshJSON", "RefreshServer", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: instrumented
        ),
        .executableTarget(
            name: "fuzz-samples", dependencies: ["FuzzDriver", "FuzzSupport", "RefreshEngine", "RefreshFeed", "RefreshJSON", "RefreshServer"],
            swiftSettings: instrumented, linkerSettings: linked
        ),
        .executableTarget(
            name: "fuzz-bodies", dependencies: ["FuzzDriver", "FuzzSupport", "RefreshEngine", "RefreshFeed", "RefreshJSON", "RefreshServer"],
            swiftSettings: instrumented, linkerSettings: linked
        ),
        .executableTarget(
            name: "fuzz-tokens",
            dependencies: [
                "FuzzDriver", "FuzzSupport", "RefreshFeed", "RefreshServer", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: instrumented, linkerSettings: linked
        ),
        .executableTarget(
            name: "fuzz-access", dependencies: ["FuzzDriver", "FuzzSupport", "RefreshFeed", "RefreshServer"],
            swiftSettings: instrumented, linkerSettings: linked
        ),
        .executableTarget(
            name: "fuzz-framing",
            dependencies: [
                "FuzzDriver", "FuzzSupport", "RefreshHTTP", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: instrumented, linkerSettings: linked
        ),
        .executableTarget(
            name: "fuzz-connection",
            dependencies: [
                "FuzzDriver", "FuzzSupport", "RefreshEngine", "RefreshFeed", "RefreshHTTP", "RefreshServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: instrumented, linkerSettings: linked
        ),
    ],
    swiftLanguageModes: [.v6]
)
