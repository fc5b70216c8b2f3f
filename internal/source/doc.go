// Package source reads Kubernetes objects from files, directories and stdin
// into one Object value per item; its package kube reads the same from an
// API server (List, and the agent's watch). It is the top of the data flow
// (DESIGN.md): it knows YAML, JSON and API shapes, and nothing of what
// policies mean. It must not import state, policy, engine or cli.
//
// Decoding has fast paths of its own in front of sigs.k8s.io/yaml and
// sigs.k8s.io/json, measured: the two libraries were nine tenths of the
// time to read a dump (BenchmarkDecode, 1k pods: about 150 ms with them
// alone, 13 ms with the fast paths). The YAML converter (fastyaml.go) and
// the typed decoder (typed.go) give exactly what the libraries give for
// the input they take, and hand all other input to them, so results and
// messages stay theirs; fuzz tests hold each fast path to its library
// (FuzzFastYAML, FuzzFastDecode, FuzzPeekHeader) and the whole Decoder to
// one without them (FuzzFastPaths).
package source
