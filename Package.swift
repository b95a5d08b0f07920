// swift-tools-version: 6.2
// 6.2: Hummingbird 2.28 and swift-configuration need it. macOS 15: Mutex, Atomic and
// swift-configuration do.
import PackageDescription

/// A dependency of the server's targets: only resolved, fetched and built with the `Server`
/// trait, which is on by default. An app that embeds only the engine turns it off
/// (`.package(url: …, from: …, traits: [])`) and resolves nothing but this package.
func server(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Server"]))
}

/// A dependency of the client's targets: only resolved with the `Client` trait (on by default,
/// and with `Server`, whose tool and tests use the client). SwiftPM resolves every package a
/// dependency's manifest uses under its enabled traits, whichever products an app takes: an
/// unconditional one here would reach an app that embeds only the engine.
func client(_ product: String, _ package: String) -> Target.Dependency {
    .product(name: product, package: package, condition: .when(traits: ["Client"]))
}

let package = Package(
    name: "swift-pull-to-refresh",
    // iOS 18, tvOS 18, visionOS 2: RefreshClient and the engine, for apps (Mutex needs them).
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .library(name: "RefreshEngine", targets: ["RefreshEngine"]),
        .library(name: "RefreshClient", targets: ["RefreshClient"]),
        .library(name: "RefreshServer", targets: ["RefreshServer"]),
        .executable(name: "refresh-server", targets: ["refresh-server"]),
        .executable(name: "refresh-client", targets: ["refresh-client"]),
    ],
    traits: [
        .trait(
            name: "Server",
            description: "The HTTP server, its store and its tools; off, only RefreshEngine (and with Client, RefreshClient) builds.",
            enabledTraits: ["Client"]
        ),
        .trait(name: "Client", description: "RefreshClient and its OpenAPI runtime; an app adding only the client enables this one."),
        .default(enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // RefreshClient's one dependency (with swift-http-types, its own): an app adding the
        // client with the `Client` trait alone resolves these two and nothing of the server.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
    ],
    targets: [
        // The gesture state machine: standard library only, so any Swift app can embed it.
        .target(
            name: "RefreshEngine",
            // `rounded()` calls libm, which Foundation links for the server but an app
            // embedding the engine alone must name.
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
        ),
        // A leaf utility, not one of the architecture's roles: the JSON toolkit the feed (JSON
        // Feed) and the server (bodies, events) share.
        .target(name: "RefreshJSON", dependencies: [server("NIOCore", "swift-nio")]),
        // Feeds and their items: positions, the stores, upstream fetching. Never the HTTP server,
        // sessions or events (Tests/adoption/target-edges.sh holds it so).
        .target(
            name: "RefreshFeed",
            dependencies: [
                "RefreshJSON",
                server("GRDB", "GRDB.swift"),
                server("PostgresNIO", "postgres-nio"),
                server("AsyncHTTPClient", "async-http-client"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOHTTPCompression", "swift-nio-extras"),
                server("NIOSSL", "swift-nio-ssl"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        // The HTTP/1.1 connection layer: the listener, each connection's state machine and its
        // handler, admission, response heads. It knows nothing of sessions, feeds, events or the
        // router: it talks to the application through the protocol it declares. SwiftNIO and
        // swift-log only, and HTTPTypes, the currency type of a response head that the router's
        // answers (Hummingbird's) and NIO's conversions already speak: the router's head then
        // reaches the socket without a conversion per request. Never the feed or the server
        // (Tests/adoption/target-edges.sh holds it so).
        .target(
            name: "RefreshHTTP",
            dependencies: [
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOExtras", "swift-nio-extras"),
                server("HTTPTypes", "swift-http-types"),
            ]
        ),
        .target(
            name: "RefreshServer",
            dependencies: [
                "RefreshEngine",
                "RefreshFeed",
                "RefreshHTTP",
                "RefreshJSON",
                server("Hummingbird", "hummingbird"),
                server("HummingbirdCore", "hummingbird"),
                server("Logging", "swift-log"),
                server("NIOCore", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("NIOHTTPTypesHTTP1", "swift-nio-extras"),
                server("NIOExtras", "swift-nio-extras"),
                server("NIOHTTPCompression", "swift-nio-extras"),
                server("CompressNIO", "compress-nio"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
                server("HTTPTypes", "swift-http-types"),
                server("GRDB", "GRDB.swift"),
                server("AsyncHTTPClient", "async-http-client"),
                server("PostgresNIO", "postgres-nio"),
                server("NIOSSL", "swift-nio-ssl"),
                server("Metrics", "swift-metrics"),
                server("Prometheus", "swift-prometheus"),
                server("Configuration", "swift-configuration"),
                server("JWTKit", "jwt-kit"),
            ]
        ),
        .executableTarget(
            name: "refresh-server",
            dependencies: [
                "RefreshServer",
                server("Logging", "swift-log"),
                server("ServiceLifecycle", "swift-service-lifecycle"),
            ]
        ),
        // Load generator for BENCHMARKS.md: a lean HTTP/1.1 + SSE client that targets a URL.
        .executableTarget(
            name: "refresh-bench",
            dependencies: [
                server("ArgumentParser", "swift-argument-parser"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("Histogram", "hdrhistogram-swift"),
            ]
        ),
        // The typed API of Public/openapi.yaml, generated by swift-openapi-generator and committed
        // (scripts/generate-client writes it; CI fails when it is stale). Package access only:
        // RefreshClient's hand-written API is what an app sees.
        .target(
            name: "RefreshAPI",
            dependencies: [client("OpenAPIRuntime", "swift-openapi-runtime")],
            exclude: ["openapi-generator-config.yaml"]
        ),
        // The Swift client for apps: sessions, the sample queue, typed events that reconnect and
        // resume. The engine's value types and the OpenAPI runtime; never a server target, and
        // the transport is the app's (URLSession, AsyncHTTPClient).
        .target(
            name: "RefreshClient",
            dependencies: [
                "RefreshAPI",
                "RefreshEngine",
                client("OpenAPIRuntime", "swift-openapi-runtime"),
            ]
        ),
        // The command-line tool on the client: publish, tail, pull.
        .executableTarget(
            name: "refresh-client",
            dependencies: [
                "RefreshClient",
                server("ArgumentParser", "swift-argument-parser"),
                server("OpenAPIAsyncHTTPClient", "swift-openapi-async-http-client"),
                server("AsyncHTTPClient", "async-http-client"),
            ]
        ),
        .testTarget(name: "RefreshEngineTests", dependencies: ["RefreshEngine"]),
        // The feed tested alone: nothing of the server is built for it.
        .testTarget(name: "RefreshFeedTests", dependencies: ["RefreshFeed"], exclude: ["Fixtures"]),
        // The connection layer tested alone: nothing of the server is built for it.
        .testTarget(
            name: "RefreshHTTPTests",
            dependencies: [
                "RefreshHTTP", server("NIOCore", "swift-nio"), server("NIOEmbedded", "swift-nio"), server("NIOHTTP1", "swift-nio"),
                server("NIOPosix", "swift-nio"),
            ]),
        // The server on a free port as both live suites start it, and asked over HTTP.
        .target(
            name: "RefreshServerTesting",
            dependencies: [
                "RefreshServer", "RefreshFeed", server("Logging", "swift-log"), server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"), server("NIOHTTP1", "swift-nio"),
            ],
            path: "Tests/RefreshServerTesting"
        ),
        .testTarget(
            name: "RefreshServerTests",
            dependencies: [
                "RefreshServer",
                "RefreshServerTesting",
                "RefreshFeed",
                "RefreshHTTP",
                "RefreshJSON",
                server("HummingbirdTesting", "hummingbird"),
                server("NIOPosix", "swift-nio"),
                server("NIOEmbedded", "swift-nio"),
                server("NIOHTTP1", "swift-nio"),
                server("AsyncHTTPClient", "async-http-client"),
                server("CompressNIO", "compress-nio"),
                server("GRDB", "GRDB.swift"),
                // Mints the tokens the server is tested with.
                server("JWTKit", "jwt-kit"),
            ]
        ),
        // The client's scroll-view helpers and the documentation's model, without a server:
        // nothing of it is built for them.
        .testTarget(
            name: "RefreshClientPlatformTests",
            dependencies: [
                "RefreshClient",
                "RefreshEngine",
                client("OpenAPIRuntime", "swift-openapi-runtime"),
                client("HTTPTypes", "swift-http-types"),
            ]
        ),
        // The client against a live server on an ephemeral port.
        .testTarget(
            name: "RefreshClientTests",
            dependencies: [
                "RefreshClient",
                "RefreshEngine",
                "RefreshServer",
                "RefreshServerTesting",
                server("OpenAPIAsyncHTTPClient", "swift-openapi-async-http-client"),
                server("AsyncHTTPClient", "async-http-client"),
                server("NIOCore", "swift-nio"),
                server("NIOPosix", "swift-nio"),
                server("JWTKit", "jwt-kit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
