import Foundation
import RefreshFeed
import Testing

/// The item limits, declared once (`ItemRules`), against the API's description and the
/// README's table of them.
@Suite struct ItemLimitsDocumentTests {
    @Test func everyItemSchemaOfTheAPIDescriptionHasTheRulesLimits() throws {
        var found = 0
        for line in try APIDocument.text().split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard let field = ItemRules.Field.allCases.first(where: { text.hasPrefix("\($0.rawValue): {type:") }),
                let range = text.range(of: "maxLength: ")
            else { continue }
            let number = Int(text[range.upperBound...].prefix { $0.isNumber })
            #expect(number == ItemRules.maxLength(of: field), "\(text)")
            found += 1
        }
        // The item, the published item and the edit (which has no id) describe them.
        #expect(found >= 14)
    }

    @Test func theReadmesTableHasTheRulesLimits() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        for field in ItemRules.Field.allCases {
            let row = readme.split(separator: "\n").first { $0.hasPrefix("| `\(field.rawValue)` |") }
            let cells = row?.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let documented = cells.flatMap { $0.count > 1 ? Int($0[1].replacingOccurrences(of: ",", with: "")) : nil }
            #expect(documented == ItemRules.maxLength(of: field), "README's row of \(field.rawValue): \(String(describing: row))")
        }
    }
}
