package lab

// InNamespace runs fn in a network namespace (for tests that send what no
// lab helper sends, such as forged DNS answers).
var InNamespace = inNamespace
