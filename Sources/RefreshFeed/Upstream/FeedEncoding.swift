import Foundation

/// A downloaded feed made into UTF-8 before it is parsed, its encoding found as RFC 7303
/// orders the clues: a byte-order mark, then the `charset` of the HTTP `Content-Type`, then
/// the XML declaration (or, without one, the shape of the first bytes), then UTF-8.
///
/// The labels are read as browsers read them (the WHATWG Encoding standard): `iso-8859-1`,
/// `latin1` and `us-ascii` mean windows-1252, which gives the bytes 0x80–0x9F the curly
/// quotes and dashes their authors typed instead of C1 controls. Bytes that are not the
/// UTF-8 they claim to be are read as windows-1252 too, as feed readers do.
enum FeedEncoding {
    struct Unsupported: Error, CustomStringConvertible {
        let label: String
        var description: String { "it is in an encoding this server does not read (\(label))" }
    }

    /// What a document was read as, and whether its bytes had to be read as windows-1252
    /// after failing as the UTF-8 they claimed (or were assumed) to be.
    struct Decoded {
        var data: Data
        var fellBack = false
    }

    /// `data` as UTF-8, without a byte-order mark; the XML declaration, if any, then says
    /// UTF-8 too, so that the parser does not read the bytes a second way.
    static func utf8(_ data: Data, contentType: String? = nil) throws -> Decoded {
        let bytes = [UInt8](data.prefix(4))
        var body = data
        var encoding: String.Encoding?
        if let (mark, length) = byteOrderMark(bytes) {
            encoding = mark
            body = data.dropFirst(length)
        } else if let label = contentType.flatMap(charset(of:)) {
            encoding = try named(label, bytes: bytes)
        } else if let shape = shape(bytes) {
            encoding = shape
        } else if let label = declaredEncoding(data) {
            encoding = try named(label, bytes: bytes)
        }
        let chosen = encoding ?? .utf8
        if chosen == .utf8 {
            if let text = String(validating: body, as: UTF8.self) {
                // A declaration that names another encoding (the HTTP charset said UTF-8) must not be read again.
                let declared = declaredEncoding(Data(body)).flatMap { try? named($0) }
                return Decoded(data: declared == nil || declared == .utf8 ? Data(body) : Data(redeclared(text).utf8))
            }
            // Not the UTF-8 it claims to be: what feed readers and browsers then read is windows-1252.
            return Decoded(data: Data(redeclared(windows1252(body)).utf8), fellBack: true)
        }
        let text: String
        if chosen == .windowsCP1252 {
            text = windows1252(body)
        } else {
            guard let decoded = String(data: Data(body), encoding: chosen) else {
                throw Unsupported(label: "bytes that are not \(chosen)")
            }
            text = decoded
        }
        return Decoded(data: Data(redeclared(text).utf8))
    }

    // MARK: - Clues

    private static func byteOrderMark(_ bytes: [UInt8]) -> (String.Encoding, Int)? {
        switch bytes {
        case let b where b.starts(with: [0xEF, 0xBB, 0xBF]): (.utf8, 3)
        case let b where b.starts(with: [0x00, 0x00, 0xFE, 0xFF]): (.utf32BigEndian, 4)
        case let b where b.starts(with: [0xFF, 0xFE, 0x00, 0x00]): (.utf32LittleEndian, 4)
        case let b where b.starts(with: [0xFE, 0xFF]): (.utf16BigEndian, 2)
        case let b where b.starts(with: [0xFF, 0xFE]): (.utf16LittleEndian, 2)
        default: nil
        }
    }

    /// UTF-16 and UTF-32 without a mark, told by how `<` (or `<?`) is written.
    private static func shape(_ bytes: [UInt8]) -> String.Encoding? {
        switch bytes {
        case [0x00, 0x00, 0x00, 0x3C]: .utf32BigEndian
        case [0x3C, 0x00, 0x00, 0x00]: .utf32LittleEndian
        case let b where b.starts(with: [0x00, 0x3C]) || b.starts(with: [0x00, 0x20]) || b.starts(with: [0x00, 0x7B]): .utf16BigEndian
        case let b where b.count >= 2 && b[1] == 0 && [0x3C, 0x20, 0x7B].contains(b[0]): .utf16LittleEndian
        default: nil
        }
    }

    /// The `charset` parameter of a `Content-Type`, unquoted.
    static func charset(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else { continue }
            let value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The `encoding` of an XML declaration at the very start, read as ASCII.
    static func declaredEncoding(_ data: Data) -> String? {
        let head = data.prefix(200)
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let declaration = String(decoding: head[..<end], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        let value = rest.dropFirst().prefix { $0 != quote }
        return value.isEmpty ? nil : String(value)
    }

    /// An encoding by its label, as browsers read labels. `bytes`: the document's first, to
    /// tell the byte order of a bare `utf-16` or `utf-32`.
    static func named(_ label: String, bytes: [UInt8] = []) throws -> String.Encoding {
        let name = label.trimmingCharacters(in: .whitespaces).lowercased().replacingOccurrences(of: "_", with: "-")
        switch name {
        case "utf-8", "utf8", "unicode-1-1-utf-8", "x-unicode20utf8": return .utf8
        case "utf-16", "utf16", "unicode", "ucs-2", "iso-10646-ucs-2", "csunicode":
            return bytes.count >= 2 && bytes[1] == 0 && bytes[0] != 0 ? .utf16LittleEndian : .utf16BigEndian
        case "utf-16le", "unicodefffe": return .utf16LittleEndian
        case "utf-16be", "unicodefeff": return .utf16BigEndian
        case "utf-32", "utf32", "ucs-4", "iso-10646-ucs-4":
            return bytes.count >= 4 && bytes[0] != 0 && bytes[3] == 0 ? .utf32LittleEndian : .utf32BigEndian
        case "utf-32le": return .utf32LittleEndian
        case "utf-32be": return .utf32BigEndian
        case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "iso-ir-100", "cp819", "ibm819", "csisolatin1", "windows-1252", "cp1252",
            "x-cp1252", "us-ascii", "ascii", "ansi-x3.4-1968", "iso-8859-1:1987":
            return .windowsCP1252
        case "iso-8859-2", "iso8859-2", "latin2", "l2", "csisolatin2": return .isoLatin2
        case "windows-1250", "cp1250", "x-cp1250": return .windowsCP1250
        case "windows-1251", "cp1251", "x-cp1251": return .windowsCP1251
        case "windows-1253", "cp1253", "x-cp1253": return .windowsCP1253
        case "windows-1254", "cp1254", "x-cp1254", "iso-8859-9", "latin5": return .windowsCP1254
        case "shift-jis", "shift_jis", "sjis", "ms-kanji", "windows-31j", "x-sjis", "csshiftjis": return .shiftJIS
        case "euc-jp", "x-euc-jp", "cseucpkdfmtjapanese": return .japaneseEUC
        case "iso-2022-jp", "csiso2022jp": return .iso2022JP
        default: throw Unsupported(label: label)
        }
    }

    // MARK: - Decoding

    /// windows-1252 as browsers decode it: the five bytes it leaves undefined become the C1
    /// controls of the same value, so no byte fails.
    static func windows1252(_ bytes: some Collection<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        for byte in bytes {
            if (0x80...0x9F).contains(byte), let mapped = c1[Int(byte - 0x80)] {
                scalars.append(mapped)
            } else {
                scalars.append(Unicode.Scalar(byte))
            }
        }
        return String(scalars)
    }

    private static let c1: [Unicode.Scalar?] = [
        "\u{20AC}", nil, "\u{201A}", "\u{0192}", "\u{201E}", "\u{2026}", "\u{2020}", "\u{2021}",
        "\u{02C6}", "\u{2030}", "\u{0160}", "\u{2039}", "\u{0152}", nil, "\u{017D}", nil,
        nil, "\u{2018}", "\u{2019}", "\u{201C}", "\u{201D}", "\u{2022}", "\u{2013}", "\u{2014}",
        "\u{02DC}", "\u{2122}", "\u{0161}", "\u{203A}", "\u{0153}", nil, "\u{017E}", "\u{0178}",
    ]

    /// The text with its XML declaration, if any, saying UTF-8.
    private static func redeclared(_ text: String) -> String {
        guard text.hasPrefix("<?xml"), let end = text.firstIndex(of: ">") else { return text }
        let declaration = text[..<end]
        guard let range = declaration.range(of: "encoding") else { return text }
        let rest = declaration[range.upperBound...]
        guard let open = rest.firstIndex(where: { $0 == "\"" || $0 == "'" }) else { return text }
        let quote = rest[open]
        guard let close = rest[rest.index(after: open)...].firstIndex(of: quote) else { return text }
        return text[..<rest.index(after: open)] + "UTF-8" + text[close...]
    }
}
