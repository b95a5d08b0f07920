/// A setting that cannot work, named in the message the way the operator wrote it:
/// `--port 70000: must be 0…65535`, `PTR_PORT=abc: not a whole number`,
/// `config.json: max-streams: must be at least 1`. Set in code, the setting is named by
/// its flag's name: `max-streams 0: must be at least 1`.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The setting at fault, named like its flag without the dashes (`port`, `max-streams`);
    /// `nil` when the fault is not one setting's (a configuration file that does not parse).
    public let setting: String?
    /// Where the faulty value came from, as it was written: `--port 70000`, `PTR_PORT=abc`,
    /// `config.json: port`.
    public let subject: String
    /// What is wrong with it: `must be 0…65535`.
    public let problem: String

    public var description: String {
        subject.isEmpty ? problem : "\(subject): \(problem)"
    }

    init(_ description: String) {
        self.init(setting: nil, subject: "", problem: description)
    }

    init(setting: String?, subject: String, problem: String) {
        self.setting = setting
        self.subject = subject
        self.problem = problem
    }

    /// A setting's value, found in code rather than in one of the sources; `value` is nil
    /// for a list, whose problem names the element at fault.
    init(setting: String, value: String?, problem: String) {
        self.init(setting: setting, subject: value.map { "\(setting) \($0)" } ?? setting, problem: problem)
    }
}
