import RefreshFeed

extension ConfigurationError {
    /// The store refused `--database`: a path is named with the setting, a URL is not echoed
    /// (it may hold a password).
    init(_ error: DatabaseLocationError) {
        if let path = error.path {
            self.init(setting: "database", value: path, problem: error.problem)
        } else {
            self.init(error.problem)
        }
    }
}
