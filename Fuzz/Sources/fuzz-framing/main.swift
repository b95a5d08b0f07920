import Foundation
import FuzzDriver

var count = CommandLine.argc
var arguments = Optional(CommandLine.unsafeArgv)
exit(LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzFraming(data, size) })
