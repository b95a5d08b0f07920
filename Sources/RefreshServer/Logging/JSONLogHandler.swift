import Logging
import RefreshFeed
import RefreshJSON

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the server writes its log lines: for people, or one JSON object per line for a
/// machine to collect.
public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json
}

/// One JSON object per event on standard error: `time` (RFC 3339, milliseconds), `level`,
/// `label`, `message`, `source`, then the metadata as fields of their own (`session`,
/// `request`…), so a collector can filter on them without parsing the message.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = self.metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let explicit = event.metadata { fields.merge(explicit) { _, new in new } }
        if let error = event.error { fields["error"] = "\(error)" }
        Self.writeRecord(level: event.level, label: label, message: event.message.description, source: event.source, fields: fields, to: 2)
    }

    /// Writes one record as ``log(event:)`` does, whatever the log level, to `descriptor`:
    /// the line that says where the server listens is such a record on standard output, so
    /// that a collector reading every line finds JSON in each.
    public static func writeRecord(
        level: Logger.Level, label: String, message: String, source: String, fields: Logger.Metadata, to descriptor: Int32
    ) {
        var json = JSONWriter(capacity: 256)
        json.beginObject()
        json.field("time", Timestamp.now().rfc3339)
        json.field("level", level.rawValue)
        json.field("label", label)
        json.field("message", message)
        json.field("source", source)
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) where !reserved.contains(key) {
            json.key(key)
            json.metadataValue(value)
        }
        json.endObject()
        var line = json.buffer
        line.writeInteger(UInt8(ascii: "\n"))
        // One `write` per line, unbuffered: lines from different threads stay whole, and a
        // crash loses none that was logged.
        line.withUnsafeReadableBytes { bytes in _ = write(descriptor, bytes.baseAddress, bytes.count) }
    }

    private static let reserved: Set<String> = ["time", "level", "label", "message", "source"]
}

extension JSONWriter {
    fileprivate mutating func metadataValue(_ value: Logger.Metadata.Value) {
        switch value {
        case .string(let string): self.value(string)
        case .stringConvertible(let convertible): self.value(convertible.description)
        case .array(let values):
            beginArray()
            for value in values { metadataValue(value) }
            endArray()
        case .dictionary(let values):
            beginObject()
            for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                self.key(key)
                metadataValue(value)
            }
            endObject()
        }
    }
}
