import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import Synchronization

/// What a feed said about its version last time, for a conditional GET.
struct UpstreamValidators: Sendable, Equatable {
    var etag: String?
    var lastModified: String?
}

/// Where a refresh stores what it pulled, and what each feed said about its version.
protocol UpstreamStore: Sendable {
    /// Upserts by id in one transaction: a new id is added, a known one whose fields changed
    /// is edited in place, one unchanged is left as it is. An item of `undated` (its feed
    /// gave it no date) that is stored already keeps the date it was first seen with, so a
    /// feed downloaded again does not move it to now.
    func store(_ items: [FeedItem], keepingDatesOf undated: Set<ItemKey>) async throws -> FeedWrite
    func validators(for url: String) async throws -> UpstreamValidators
    func saveValidators(_ validators: UpstreamValidators, for url: String) async throws
}

/// An upstream that could not be read, in words a person understands.
public struct UpstreamError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// The upstream feeds a refresh pulls, fetched concurrently and streamed: each reports
/// connecting, downloading (by `Content-Length`, or bytes so far), parsing and storing, and
/// the refresh's progress is their combined fraction.
public final class UpstreamSet: Sendable {
    public let urls: [String]
    let maxBytes: Int
    let timeout: Duration
    /// Counts and times each feed's fetch.
    let metrics: (any FeedObserver)?
    private let client: HTTPClient

    /// - Parameters:
    ///   - maxBytes: a feed larger than this fails the refresh instead of filling memory.
    ///   - timeout: the longest a whole download may take.
    public init(
        urls: [String], maxBytes: Int = 10 * 1024 * 1024, timeout: Duration = .seconds(20), metrics: (any FeedObserver)? = nil
    ) throws {
        for url in urls {
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
                parsed.host != nil
            else { throw UpstreamError(description: "\(url) is not an http or https URL.") }
        }
        self.urls = urls
        self.maxBytes = maxBytes
        self.timeout = timeout
        self.metrics = metrics
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(15))
        configuration.decompression = .enabled(limit: .size(maxBytes))
        configuration.redirectConfiguration = .follow(max: 5, allowCycles: false)
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    deinit {
        // The last reference may go on an event loop (a server's registry let go as it
        // stops), where a blocking shutdown is a crash: it ends in the background instead.
        _ = client.shutdown()
    }

    func refresh(into store: some UpstreamStore, progress: @escaping ProgressSink) async throws -> FeedUpdate {
        let fractions = Mutex([Double](repeating: 0, count: urls.count))
        let report: @Sendable (Int, Double, String, String) -> Void = { index, fraction, stage, message in
            let combined = fractions.withLock { fractions in
                fractions[index] = max(fractions[index], fraction)
                return fractions.reduce(0, +) / Double(fractions.count)
            }
            let prefix = self.urls.count > 1 ? "\(Self.host(self.urls[index])): " : ""
            progress(FeedProgress(fraction: combined, stage: stage, message: prefix + message))
        }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for (index, url) in urls.enumerated() {
                group.addTask {
                    let started = ContinuousClock.now
                    do {
                        let added = try await self.refresh(url, into: store) { report(index, $0, $1, $2) }
                        self.metrics?.upstreamFetchFinished(.completed, in: .now - started)
                        return (index, added)
                    } catch {
                        self.metrics?.upstreamFetchFinished(Task.isCancelled ? .cancelled : .failed, in: .now - started)
                        throw error
                    }
                }
            }
            var added = [Int](repeating: 0, count: urls.count)
            for try await (index, count) in group { added[index] = count }
            return added
        }
        let added = results.reduce(0, +)
        let message = added == 0 ? "Already up to date" : added == 1 ? "1 new item" : "\(added) new items"
        return FeedUpdate(added: added, message: message)
    }

    /// One feed: download, parse, store; answers how many items were new.
    private func refresh(
        _ url: String, into store: some UpstreamStore, report: @escaping @Sendable (Double, String, String) -> Void
    ) async throws -> Int {
        let host = Self.host(url)
        report(0, "connecting", "Connecting to \(host)…")
        let validators = try await store.validators(for: url)
        // The client's own deadline ends the head's wait with its reason (refused, not found,
        // no answer); the whole download's follows it, for a body that drips. Until a head has
        // come the client's deadline is left 2 s to report, which a busy machine may need.
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let progress = DownloadProgress()
        let download = try await UpstreamDeadline.run(
            within: timeout + .milliseconds(200), grace: progress.answered ? .zero : .seconds(2),
            else: UpstreamError(
                description: progress.answered
                    ? "\(host) did not send the whole feed within \(timeout.secondsText)."
                    : "\(host) did not answer within \(timeout.secondsText).")
        ) {
            try await self.download(url, validators: validators, deadline: deadline, progress: progress, report: report)
        }
        guard case .feed(let body, let contentType, let newValidators) = download else {
            report(1, "done", "\(host) is unchanged")
            return 0
        }
        try Task.checkCancellation()
        report(0.85, "parsing", "Reading the feed from \(host)…")
        let document: FeedParser.Document
        do {
            document = try FeedParser.read(Data(body.readableBytesView), source: url, contentType: contentType)
        } catch {
            throw UpstreamError(description: "The feed at \(host) could not be read: \(error)")
        }
        for warning in document.warnings { metrics?.upstreamWarning(warning) }
        let admitted = admit(document.entries, base: URL(string: url))
        let skipped = admitted.skipped == 0 ? "" : " (\(admitted.skipped) skipped: over the item limits)"
        report(0.92, "storing", "Storing \(admitted.items.count) items from \(host)…\(skipped)")
        let written = try await store.store(admitted.items, keepingDatesOf: admitted.undated)
        let added = written.added
        if !written.changes.isEmpty { metrics?.upstreamItemsEdited(written.changes.count) }
        try await store.saveValidators(newValidators, for: url)
        report(1, "done", (added == 0 ? "\(host) has nothing new" : "\(added) new from \(host)") + skipped)
        return added
    }

    /// What a download brought: nothing new (`304`), or the feed and its validators.
    private enum Download: Sendable {
        case unchanged
        case feed(ByteBuffer, contentType: String?, UpstreamValidators)
    }

    /// The response head and the whole body; ``UpstreamDeadline`` bounds it all.
    private func download(
        _ url: String, validators: UpstreamValidators, deadline: NIODeadline, progress: DownloadProgress,
        report: @escaping @Sendable (Double, String, String) -> Void
    ) async throws -> Download {
        let host = Self.host(url)
        var request = HTTPClientRequest(url: url)
        request.headers.add(
            name: "Accept", value: "application/feed+json, application/atom+xml, application/rss+xml, application/xml;q=0.9, */*;q=0.8")
        request.headers.add(name: "User-Agent", value: "swift-pull-to-refresh")
        if let etag = validators.etag { request.headers.add(name: "If-None-Match", value: etag) }
        if let lastModified = validators.lastModified { request.headers.add(name: "If-Modified-Since", value: lastModified) }

        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw Self.explain(error, url: url, timeout: timeout, maxBytes: maxBytes)
        }
        progress.answer()
        if response.status == .notModified { return .unchanged }
        guard (200..<300).contains(response.status.code) else {
            throw UpstreamError(description: "\(host) answered \(response.status.code) \(response.status.reasonPhrase).")
        }
        let expected = response.headers.first(name: "Content-Length").flatMap(Int.init)
        if let expected, expected > maxBytes {
            throw UpstreamError(description: "The feed at \(host) is \(expected) bytes, over the limit of \(maxBytes).")
        }
        var body = ByteBuffer()
        do {
            for try await chunk in response.body {
                body.writeImmutableBuffer(chunk)
                guard body.readableBytes <= maxBytes else {
                    throw UpstreamError(description: "The feed at \(host) is over the limit of \(maxBytes) bytes.")
                }
                let received = body.readableBytes
                if let expected, expected > 0 {
                    report(
                        0.1 + 0.7 * min(1, Double(received) / Double(expected)), "downloading",
                        "Downloading from \(host): \(Self.size(received)) of \(Self.size(expected))")
                } else {
                    // Unknown length: the fraction creeps towards the end of the step.
                    report(
                        0.1 + 0.7 * (1 - 1 / (1 + Double(received) / 65536)), "downloading",
                        "Downloading from \(host): \(Self.size(received)) so far")
                }
            }
        } catch let error as UpstreamError {
            throw error
        } catch {
            throw Self.explain(error, url: url, timeout: timeout, maxBytes: maxBytes)
        }
        let validators = UpstreamValidators(etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
        return .feed(body, contentType: response.headers.first(name: "Content-Type"), validators)
    }

    /// The entries held to ``ItemRules``: what is kept, and how many were left out; each
    /// skip and each cut is counted in the metrics.
    private func admit(_ entries: [FeedParser.Entry], base: URL?) -> (items: [FeedItem], undated: Set<ItemKey>, skipped: Int) {
        var items: [FeedItem] = []
        var undated: Set<ItemKey> = []
        var skipped = 0
        for entry in entries {
            let admission: ItemRules.Admission
            var dated = true
            switch entry {
            case .item(let item, let hasDate):
                admission = ItemRules.admit(item, base: base)
                dated = hasDate
            case .unusable(let reason): admission = .skip(reason)
            }
            switch admission {
            case .keep(let item, let cut):
                items.append(item)
                if !dated { undated.insert(ItemKey(item.id)) }
                for field in cut { metrics?.upstreamTextCut(in: field) }
            case .skip(let reason):
                skipped += 1
                metrics?.upstreamItemSkipped(because: reason)
            }
        }
        return (items, undated, skipped)
    }

    static func host(_ url: String) -> String { URL(string: url)?.host ?? url }

    static func size(_ bytes: Int) -> String {
        bytes < 1024 ? "\(bytes) B" : bytes < 1024 * 1024 ? "\(bytes / 1024) KB" : String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }

    /// Turns transport errors into sentences; the raw error stays in the text for operators.
    static func explain(_ error: any Error, url: String, timeout: Duration, maxBytes: Int) -> UpstreamError {
        if let error = error as? UpstreamError { return error }
        let host = host(url)
        if let error = error as? NIOHTTPDecompression.DecompressionError, error == .limit {
            return UpstreamError(
                description: "The feed at \(host) is over the limit of \(maxBytes) bytes once decompressed (the decompression limit stopped it).")
        }
        let text = String(describing: error)
        let lower = text.lowercased()
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return UpstreamError(description: "\(host) did not accept the connection in time.")
            case .readTimeout, .deadlineExceeded: return UpstreamError(description: "\(host) did not answer in time.")
            case .bodyLengthMismatch, .remoteConnectionClosed:
                return UpstreamError(description: "\(host) closed the connection before the feed was complete.")
            default: break
            }
        }
        if lower.contains("refused") || lower.contains("errno: 111") {
            return UpstreamError(description: "\(host) refused the connection.")
        }
        if lower.contains("lookup") || lower.contains("resolve") || lower.contains("nodename") || lower.contains("dns")
            || lower.contains("name or service")
        {
            return UpstreamError(description: "\(host) could not be found (DNS).")
        }
        if lower.contains("timeout") || lower.contains("timed out") || error is CancellationError {
            return UpstreamError(description: "\(host) did not answer within \(timeout.secondsText).")
        }
        return UpstreamError(description: "\(host) could not be reached: \(text).")
    }
}

/// Whether an upstream's response head has come, told from the download's task to the
/// deadline's, which names what the upstream failed to do.
final class DownloadProgress: Sendable {
    private let headArrived = Atomic(false)

    var answered: Bool { headArrived.load(ordering: .acquiring) }

    func answer() { headArrived.store(true, ordering: .releasing) }
}
