import Foundation

/// `Public/openapi.yaml`, the API's description, as text: the tests that hold it to the code
/// read the few blocks they need line by line.
enum APIDocument {
    static func text() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("Public/openapi.yaml"), encoding: .utf8)
    }
}
