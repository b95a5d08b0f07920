import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The files of `Public/`, read once at start with their gzip variant and ETags.
///
/// Requests are answered from this table only, never by opening a path built from the URL,
/// so no request can reach a file outside the folder.
public struct StaticFiles: Sendable {
    struct File: Sendable {
        let contentType: String
        let body: ByteBuffer
        let etag: String
        let gzipped: ByteBuffer?
        let gzipETag: String
    }

    private let files: [String: File]

    public init(directory: String) throws {
        let root = URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath()
        var files: [String: File] = [:]
        let keys: [URLResourceKey] = [.isRegularFileKey]
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys) else {
            self.files = [:]
            return
        }
        let rootPath = root.path.hasSuffix("/") ? root.path : root.path + "/"
        for case let url as URL in enumerator {
            let resolved = url.resolvingSymlinksInPath()
            guard (try? resolved.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                resolved.path.hasPrefix(rootPath)
            else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(rootPath.count))
            guard !relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) else { continue }
            let data = try Data(contentsOf: resolved)
            let body = ByteBuffer(bytes: data)
            let contentType = Self.contentType(for: url.pathExtension)
            let etag = "\"\(Self.hash(data))\""
            let compressible =
                contentType.hasPrefix("text/") || contentType.contains("javascript") || contentType.contains("json")
                || contentType.contains("svg") || contentType.contains("yaml")
            let gzipped = compressible ? Gzip.compress(body).flatMap { $0.readableBytes < body.readableBytes ? $0 : nil } : nil
            files["/" + relative] = File(
                contentType: contentType, body: body, etag: etag, gzipped: gzipped,
                gzipETag: "\"\(Self.hash(data))-gz\"")
        }
        self.files = files
    }

    /// The response for a request path, or `nil` when there is no such file.
    func response(path rawPath: String, request: Request) throws(APIError) -> Response? {
        let path = try Self.normalize(rawPath)
        guard let file = files[path] ?? files[path.hasSuffix("/") ? path + "index.html" : path + "/index.html"] else {
            return nil
        }
        let useGzip = file.gzipped != nil && Gzip.accepted(by: request.head)
        let etag = useGzip ? file.gzipETag : file.etag
        var headers: HTTPFields = [
            .contentType: file.contentType,
            .eTag: etag,
            .cacheControl: "no-cache",
            .vary: "Accept-Encoding",
            .init("X-Content-Type-Options")!: "nosniff",
            .contentSecurityPolicy: Self.contentSecurityPolicy,
            .init("Referrer-Policy")!: "no-referrer",
        ]
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: {
                let tag = $0.trimmingCharacters(in: .whitespaces)
                return tag == etag || tag == "W/\(etag)" || tag == "*"
            })
        {
            return Response(status: .notModified, headers: headers)
        }
        let body = useGzip ? file.gzipped! : file.body
        if useGzip { headers[.contentEncoding] = "gzip" }
        headers[.contentLength] = String(body.readableBytes)
        if request.method == .head { return Response(status: .ok, headers: headers) }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// What the page may load and do: its own scripts, styles and images (and inline SVG or
    /// `data:` images), requests to its own server, nothing else; no inline script, no
    /// plugin, no framing by another site (clickjacking), no `<base>` to redirect its URLs.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// Decodes the path and refuses anything that tries to climb out (`..`, encoded
    /// slashes or NUL), so a traversal attempt is a clear 400 rather than a silent 404.
    static func normalize(_ rawPath: String) throws(APIError) -> String {
        guard let decoded = rawPath.removingPercentEncoding else {
            throw APIError(.invalidPath, "The path is not valid percent-encoding.")
        }
        let segments = decoded.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { $0 == ".." || $0 == "." }), !decoded.contains("\\"), !decoded.contains("\0"),
            rawPath.range(of: "%2f", options: .caseInsensitive) == nil
        else {
            throw APIError(.invalidPath, "The path may not contain '..', '.', backslashes or encoded slashes.")
        }
        return decoded.isEmpty ? "/" : decoded
    }

    private static func contentType(for pathExtension: String) -> String {
        switch pathExtension.lowercased() {
        case "html", "htm": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json": "application/json"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "ico": "image/x-icon"
        case "webmanifest": "application/manifest+json"
        case "yaml", "yml": "application/yaml"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// FNV-1a, 64 bits: stable across runs, enough to tell versions of a file apart.
    private static func hash(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
