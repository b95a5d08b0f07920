import Foundation
import RefreshEngine
import Testing

@testable import RefreshServer

/// The sample's members as ``SampleField`` declares them, and as `openapi.yaml` describes
/// them: the same names, the same required ones, the same kinds and phase names.
@Suite struct SampleFieldsDocumentTests {
    /// The lines of the `Sample` schema's properties.
    private func sampleSchema() throws -> (required: Set<String>, properties: [String: String]) {
        let lines = try APIDocument.text().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "    Sample:"))
        let block = lines[(start + 1)...].prefix { $0.hasPrefix("      ") }
        let requiredLine = try #require(block.first { $0.hasPrefix("      required: [") })
        let required = Set(
            requiredLine.drop { $0 != "[" }.dropFirst().prefix { $0 != "]" }.split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            })
        var properties: [String: String] = [:]
        for line in block where line.hasPrefix("        ") && !line.hasPrefix("         ") {
            let parts = line.trimmingCharacters(in: .whitespaces).split(separator: ":", maxSplits: 1)
            properties[String(parts[0])] = String(parts[1])
        }
        return (required, properties)
    }

    @Test func theTableAndTheDocumentNameTheSameMembers() throws {
        let (required, properties) = try sampleSchema()
        #expect(Set(properties.keys) == SampleField.names)
        #expect(required == Set(SampleField.allCases.filter { $0.required != nil }.map(\.rawValue)))
        for field in SampleField.allCases {
            let described = try #require(properties[field.rawValue])
            switch field.value {
            case .wholeNumber: #expect(described.contains("type: integer"), "\(field)")
            case .number: #expect(described.contains("type: number"), "\(field)")
            case .phase:
                let names = Sample.Phase.allCases.map(\.rawValue).joined(separator: ", ")
                #expect(described.contains("enum: [\(names)]"), "\(field)")
                #expect(described.contains("default: \(SampleDraft(seq: 1, y: 0).sample?.phase.rawValue ?? "?")"), "\(field)")
            case .input:
                let names = Sample.Input.allCases.map(\.rawValue).joined(separator: ", ")
                #expect(described.contains("enum: [\(names)]"), "\(field)")
            }
        }
    }
}
