import Hummingbird
import NIOCore

/// `GET /metrics`: the server's ``ServerMetrics`` in Prometheus's text format, version 0.0.4,
/// gzipped for a scraper that accepts it. The gauges of sessions, open streams and active feeds are read
/// at each scrape.
struct MetricsRoutes<Context: RequestContext>: Sendable {
    let metrics: ServerMetrics
    let sessions: SessionStore
    let streams: StreamGate
    let feeds: FeedRegistry

    static var contentType: String { "text/plain; version=0.0.4; charset=utf-8" }

    @Sendable func scrape(_ request: Request, context: Context) async throws -> Response {
        var body = metrics.exposition(sessions: sessions.count, openStreams: streams.openStreams, feedsActive: feeds.active)
        var headers: HTTPFields = [.contentType: Self.contentType, .cacheControl: "no-store", .vary: "Accept-Encoding"]
        if Gzip.accepted(by: request.head), let compressed = Gzip.compress(body) {
            headers[.contentEncoding] = "gzip"
            body = compressed
        }
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
